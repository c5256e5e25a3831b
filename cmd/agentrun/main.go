// Command agentrun is the one binary: `serve` starts the server and a runner; every other verb is
// the CLI, which talks to a server over HTTP. The command tree lives in internal/app.
package main

import (
	"os"

	"agentrun.dev/agentrun/internal/app"
	"agentrun.dev/agentrun/internal/computer/sandboxhelper"
	"agentrun.dev/agentrun/internal/workflow"
)

func main() {
	// The re-exec entry points first: a sandbox runs this same executable as its helper inside it,
	// and a workflow's code node runs in a child of it with its memory bounded.
	if code, ok := sandboxhelper.Main(os.Args[1:]); ok {
		os.Exit(code)
	}
	if code, ok := workflow.Main(os.Args[1:]); ok {
		os.Exit(code)
	}
	os.Exit(app.Main(os.Args[1:]))
}
