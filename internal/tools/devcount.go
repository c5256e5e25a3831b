package tools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/catalog"
)

// maxDevSleep is the longest dev_count may wait (the catalog bounds sleep_ms too).
const maxDevSleep = 3_600_000 // an hour, in milliseconds

// devCountRun is dev_count, a test-support tool with a real side effect
// outside the run folder: it appends a line to the file named by
// AGENTRUN_DEV_COUNT_FILE, so crash tests can count how many times a call
// really ran. It exists only with the dev flag (EnableDevTools).
func devCountRun(ctx context.Context, env Env, v any) (Result, error) {
	in, isInput := v.(*catalog.DevCount)
	if !isInput {
		return Result{}, fmt.Errorf("dev_count: input is a %T", v)
	}
	label, sleep := in.Label, in.SleepMS
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
