package api

import "slices"

// Harness is what runs an agent's loop (spec.harness): this server's own or an agent CLI.
type Harness string

// The harnesses.
const (
	HarnessBuiltin     Harness = "builtin"
	HarnessClaudeAgent Harness = "claude-agent"
	HarnessPi          Harness = "pi"
	HarnessCodex       Harness = "codex"
	HarnessOpenCode    Harness = "opencode"
)

// Harnesses are the spec.harness values this build runs: builtin and the drivers of
// internal/harness (a driver added there adds its name here).
var Harnesses = []Harness{HarnessBuiltin, HarnessClaudeAgent, HarnessPi, HarnessCodex, HarnessOpenCode}

// Known reports whether this build runs h.
func (h Harness) Known() bool { return slices.Contains(Harnesses, h) }

// Harness run reasons.
const (
	// ReasonHarnessUnavailable: the harness could not be installed or started on this runner.
	ReasonHarnessUnavailable = "HarnessUnavailable"
	// ReasonHarnessError: the harness process exited with an error (its last stderr lines are on
	// the timeline).
	ReasonHarnessError = "HarnessError"
	// ReasonReplayDiverged: after a restart the harness asked for something other than what the
	// journal recorded at that step, so the run cannot be replayed and waits for a person.
	ReasonReplayDiverged = "ReplayDiverged"
)

func harnessList() string {
	s := ""
	for i, h := range Harnesses {
		if i > 0 {
			s += ", "
		}
		s += string(h)
	}
	return s
}
