package ifbusy

import (
	"testing"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/harness"
)

func TestClaudeInterrupt(t *testing.T) {
	t.Parallel()
	e := NewClaudeEnv(t, HarnessInterruptScript("mcp__agentrun__dev_count"))
	HarnessInterrupt(t, e, "claude-agent", "mcp__agentrun__dev_count", true, true)
}

func TestCodexInterrupt(t *testing.T) {
	t.Parallel()
	e := NewCodexEnv(t, HarnessInterruptScript("dev_count"))
	HarnessInterrupt(t, e, "codex", "dev_count", true, true)
}

// TestCodexAnthropicInterrupt is TestCodexInterrupt on a server with only an Anthropic key: the
// stopped call's answer is translated to the Responses events Codex reads, as every answer is.
func TestCodexAnthropicInterrupt(t *testing.T) {
	t.Parallel()
	cache := InstalledHarness(t, "codex")
	e := NewEnv(t, HarnessInterruptScript("mcp__agentrun__dev_count"))
	e.Extra = append(e.Extra, harness.CacheEnv+"="+cache)
	HarnessInterrupt(t, e, "codex", "mcp__agentrun__dev_count", true, true)
}

func TestPiInterrupt(t *testing.T) {
	t.Parallel()
	cache := InstalledHarness(t, "pi")
	e := NewEnv(t, HarnessInterruptScript("dev_count"))
	e.Extra = append(e.Extra, harness.CacheEnv+"="+cache)
	HarnessInterrupt(t, e, "pi", "dev_count", true, true)
}

// Rollback on each harness: the turn's folder changes undone, the harness started again from
// the journal without the turn (HarnessRollback).
func TestClaudeRollback(t *testing.T) {
	t.Parallel()
	slow, after := HarnessRollbackScript("mcp__agentrun__")
	e := NewClaudeEnv(t, slow)
	HarnessRollback(t, e, "claude-agent", `["write","dev_count"]`, true, after)
}

func TestCodexRollback(t *testing.T) {
	t.Parallel()
	slow, after := HarnessRollbackScript("")
	e := NewCodexEnv(t, slow)
	HarnessRollback(t, e, "codex", `["write","dev_count"]`, true, after)
}

func TestPiRollback(t *testing.T) {
	t.Parallel()
	cache := InstalledHarness(t, "pi")
	slow, after := HarnessRollbackScript("")
	e := NewEnv(t, slow)
	e.Extra = append(e.Extra, harness.CacheEnv+"="+cache)
	HarnessRollback(t, e, "pi", `["write","dev_count"]`, false, after)
}
