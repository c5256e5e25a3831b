// Package providers assembles the computer providers this server has (they
// live in subpackages of computer, which therefore cannot list them itself).
package providers

import (
	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/computer/chromium"
	"agentrun.dev/agentrun/internal/computer/docker"
	"agentrun.dev/agentrun/internal/computer/local"
	"agentrun.dev/agentrun/internal/computer/remote"
)

// SandboxPreference is the order in which an agent with no computer setting
// gets a sandbox: the best one available here.
var SandboxPreference = []string{"docker", "local"}

// Default returns a registry of every provider built in, the remote vendors
// included (listed, not available: see package remote). secrets, when not
// nil, tells whether each vendor's key is set.
func Default(secrets remote.Secrets) *computer.Registry {
	ps := []computer.Provider{local.New(), chromium.New(), docker.New()}
	return computer.NewRegistry(append(ps, remote.Providers(secrets)...)...)
}
