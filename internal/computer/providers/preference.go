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
		// The local desktop starts in a fraction of a second and needs no image; a docker one
		// is used when named, or where the local one is not available.
		return []string{"local", "docker"}
	}
	return nil
}
