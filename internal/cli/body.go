package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"agentrun.dev/agentrun/internal/api"
)

// readArg resolves a value that may name a file: "@FILE" reads FILE, "@-" (or "-") reads stdin,
// anything else is the value itself. source names where it came from, for errors.
func readArg(arg string, stdin io.Reader) (data []byte, source string, err error) {
	switch {
	case arg == "-" || arg == "@-":
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, "", fmt.Errorf("read stdin: %w", err)
		}
		return b, "stdin", nil
	case strings.HasPrefix(arg, "@"):
		name := arg[1:]
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, "", usageError("read %s: %v", name, err)
		}
		return b, name, nil
	}
	return []byte(arg), "", nil
}

// jsonBody resolves a --body style value (see readArg) and checks that it is JSON; with allowYAML
// a YAML document is converted to JSON. flag names the flag for errors.
func jsonBody(flag, arg string, stdin io.Reader, allowYAML bool) ([]byte, error) {
	data, source, err := readArg(arg, stdin)
	if err != nil {
		return nil, err
	}
	what := flag
	if source != "" {
		what = flag + " (" + source + ")"
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, usageError("%s is empty", what)
	}
	if json.Valid(trimmed) {
		return trimmed, nil
	}
	if allowYAML && trimmed[0] != '{' && trimmed[0] != '[' {
		j, err := api.YAMLToJSON(trimmed)
		if err == nil {
			return j, nil
		}
		return nil, usageError("%s is neither JSON nor YAML: %s", what, describe(err))
	}
	var v any
	err = json.Unmarshal(trimmed, &v)
	return nil, usageError("%s is not valid JSON: %v", what, err)
}

// startOptions are the flags of `runs start` that add to or override the body.
type startOptions struct {
	Input, MaxCostUSD, Deadline, Name *string
	KeepAlive                         *bool
}

// buildStartBody merges runs start's flags into its --body (the seed's {"input": {"content": ...}}
// shape): a flag that was given overrides the body's field. body may be nil.
func buildStartBody(body []byte, o startOptions) ([]byte, error) {
	m := map[string]any{}
	if len(bytes.TrimSpace(body)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil || m == nil {
			return nil, usageError("--body must be a JSON object such as {\"input\": {\"content\": \"...\"}}")
		}
	}
	if o.Input != nil {
		m["input"] = map[string]any{"content": *o.Input}
	}
	if o.MaxCostUSD != nil {
		m["max_cost_usd"] = *o.MaxCostUSD
	}
	if o.KeepAlive != nil {
		m["keep_alive"] = *o.KeepAlive
	}
	if o.Deadline != nil {
		m["deadline"] = *o.Deadline
	}
	if o.Name != nil {
		m["name"] = *o.Name
	}
	return json.Marshal(m)
}
