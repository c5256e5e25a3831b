package computer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"agentrun.dev/agentrun/internal/computer"
)

// How the agent loop uses a run's computer: the tools of its kind go to the
// model, each tool call runs through computer.Run, and a computer that died
// is forgotten so the next call makes a new one around the same folder.
func Example() {
	var live computer.Live // Registry: providers.Default() in the server
	live.Registry = computer.NewRegistry()
	ctx := context.Background()
	spec := computer.Spec{Run: "run-1", Folder: "/data/runs/run-1", Kind: computer.KindSandbox}

	for _, t := range computer.Tools(spec.Kind) {
		fmt.Println(t.Name, t.ReadOnly)
	}

	call := func(name string, input json.RawMessage) (string, bool, error) {
		c, err := live.Get(ctx, "local", spec)
		if err != nil {
			return "", false, err // the journaled creation step failed
		}
		content, isError, err := computer.Run(ctx, c, name, input)
		if errors.Is(err, computer.ErrClosed) {
			live.Forget(spec.Run, c)
			c.Close()
		}
		return content, isError, err
	}
	_, _, err := call("bash", json.RawMessage(`{"command":"python3 --version"}`))
	fmt.Println(err)
	defer live.Close(spec.Run)
	// Output:
	// bash false
	// bash_output true
	// bash_kill false
	// bash_list true
	// unknown computer provider "local"
}
