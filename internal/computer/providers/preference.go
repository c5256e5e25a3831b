package providers

import "agentrun.dev/agentrun/internal/computer"

// Preference is the order in which providers are tried for an agent whose computer names a kind
// but no provider: the best one available here.
func Preference(kind computer.Kind) []string {
	switch kind {
	case computer.KindSandbox:
		return SandboxPreference
	case computer.KindBrowser:
		return []string{"chromium"}
	case computer.KindDesktop:
		return []string{"local"}
	}
	return nil
}
