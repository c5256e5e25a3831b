// Command agentrun is the one binary: `serve` starts the server and a runner; every other verb is
// the CLI, which talks to a server over HTTP. The command tree lives in internal/app.
package main

import (
	"os"

	"agentrun.dev/agentrun/internal/app"
)

func main() {
	os.Exit(app.Main(os.Args[1:]))
}
