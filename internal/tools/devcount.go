package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

const (
	devCountName = "dev_count"
	maxDevSleep  = 3_600_000 // an hour, in milliseconds
)

var devCountSpec = inputSpec{fields: []field{
	{name: "label", typ: typeString, required: true,
		desc: "Text of the line to append (one line, no newline)."},
	{name: "sleep_ms", typ: typeInteger, min: minimum(0),
		desc: "Milliseconds to wait after appending, before returning. Default 0."},
}}

// devCountTool is a test-support tool with a real side effect outside the
// run folder: it appends a line to the file named by
// AGENTRUN_DEV_COUNT_FILE, so crash tests can count how many times a call
// really ran. It exists only while AGENTRUN_DEV_TOOLS=1.
type devCountTool struct{}

func (devCountTool) Name() string { return devCountName }

func (devCountTool) Description() string {
	return "Test tool: record that this call happened by appending the label as one line to the server's count file, " +
		"then wait sleep_ms milliseconds and return \"counted <label>\". It has a real side effect, so it is never repeated after a crash."
}

func (devCountTool) Schema() json.RawMessage { return devCountSpec.schema() }
func (devCountTool) ReadOnly() bool          { return false }

func (devCountTool) Run(ctx context.Context, env Env, input json.RawMessage) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	a, msg := devCountSpec.decode(input)
	if msg != "" {
		return fail("%s", msg)
	}
	label, _ := a.str("label")
	sleep, _ := a.integer("sleep_ms")
	if sleep > maxDevSleep {
		return fail("field \"sleep_ms\" must be at most %d, got %d", maxDevSleep, sleep)
	}
	if strings.ContainsAny(label, "\r\n") {
		return fail("label must be a single line")
	}
	name := os.Getenv(EnvDevCountFile)
	if name == "" || !filepath.IsAbs(name) {
		return Result{}, fmt.Errorf("dev_count: %s must be an absolute path, got %q", EnvDevCountFile, name)
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return Result{}, fmt.Errorf("dev_count: %w", err)
	}
	_, err = f.WriteString(label + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Result{}, fmt.Errorf("dev_count: %w", err)
	}
	if sleep > 0 {
		t := time.NewTimer(time.Duration(sleep) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return Result{}, ctx.Err()
		}
	}
	return ok("counted %s", label)
}
