package api

// Harnesses are the spec.harness values this build runs: builtin and the drivers of
// internal/harness (a driver added there adds its name here).
var Harnesses = []string{"builtin", "claude-agent", "pi", "codex", "opencode"}

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

func knownHarness(name string) bool {
	for _, h := range Harnesses {
		if h == name {
			return true
		}
	}
	return false
}

func harnessList() string {
	s := ""
	for i, h := range Harnesses {
		if i > 0 {
			s += ", "
		}
		s += h
	}
	return s
}
