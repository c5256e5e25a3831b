package harnessext

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/harness"
)

// Harness runs get the agent's skills as builtin runs do: the instructions the harness is given
// name each skill with its description, and the run's skill tool (served over MCP like the other
// tools) returns SKILL.md, with skill.opened on the timeline. Each test puts a recording proxy in
// front of the scripted model server, so the check is on the bodies the vendor gets.

// harnessSkillRun adds the release-notes skill, runs an agent of the harness naming it, and checks
// the answer, the timeline and that a model request carried the skill's name and description.
func harnessSkillRun(t *testing.T, e *Env, harnessName string, bodies func() [][]byte) {
	t.Helper()
	e.MustCLI(0, "skills", "add", WriteSkill(t, map[string]string{"SKILL.md": ReleaseNotesMD}))
	e.MustAgent("writer", `{"metadata":{"name":"writer"},"spec":{"harness":"`+harnessName+`","system":"You write release notes.","skills":["release-notes"],"tools":["write"],"approvals":"never-ask"}}`)
	e.StartRun("writer", "hs-run", "Write the release notes for 1.2")
	if got := e.AnswerOf("hs-run"); !strings.Contains(got, "Read CHANGELOG.md.") {
		t.Errorf("answer %q does not carry SKILL.md", got)
	}
	if !HasEvent(e.Events("hs-run"), "skill.opened", "release-notes@1 (SKILL.md)") {
		t.Error("the timeline does not say the run opened the skill")
	}
	want := "release-notes: Write release notes from a changelog, grouped by kind of change."
	for _, b := range bodies() {
		if bytes.Contains(b, []byte(want)) && bytes.Contains(b, []byte("You write release notes.")) {
			return
		}
	}
	t.Errorf("no model request of the %s run names the skill with its description (%q)", harnessName, want)
}

func TestClaudeSkills(t *testing.T) {
	t.Parallel()
	e := NewClaudeEnv(t, `
entries:
  - name: notes
    match: "Write the release notes"
    turns:
      - tool_calls:
          - name: mcp__agentrun__skill
            input: {name: release-notes}
      - text: "done: {{last_tool_result}}"
`)
	url, bodies := RecordingProxy(t, e)
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--router", "rules"}, "ANTHROPIC_BASE_URL="+url)
	harnessSkillRun(t, e, "claude-agent", bodies)
}

func TestCodexSkills(t *testing.T) {
	t.Parallel()
	e := NewCodexEnv(t, `
entries:
  - name: notes
    match: "Write the release notes"
    turns:
      - tool_calls:
          - name: skill
            input: {name: release-notes}
      - text: "done: {{last_tool_result}}"
`)
	url, bodies := RecordingProxy(t, e)
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--router", "rules"}, "OPENAI_BASE_URL="+url+"/v1")
	harnessSkillRun(t, e, "codex", bodies)
}

// shellProbeMD is a skill whose body holds Claude Code's inline shell syntax: loading it must not
// run the command (it would run past the run's tools and approvals).
const shellProbeMD = "---\nname: shell-probe\ndescription: Probe whether a skill's inline shell runs.\n---\nThe marker: !`echo SHELL-RAN-$((6*7))`\n"

// TestClaudeSkillFolder: Claude Code gets the run's skills in its own skill folder
// (CLAUDE_CONFIG_DIR/skills/NAME/SKILL.md): its first model request lists them, and none of its
// bundled skills, for its Skill tool; the Skill tool loads SKILL.md into the conversation, the
// timeline records skill.opened, a skill's inline shell (!`command`) is not run, and a skill the
// run does not have is refused.
func TestClaudeSkillFolder(t *testing.T) {
	t.Parallel()
	e := NewClaudeEnv(t, `
entries:
  - name: notes
    match: "Write the release notes"
    turns:
      - tool_calls:
          - name: Skill
            input: {skill: release-notes}
      - tool_calls:
          - name: Skill
            input: {skill: shell-probe}
      - tool_calls:
          - name: Skill
            input: {skill: not-the-runs}
      - text: "done: {{last_tool_result}}"
`)
	url, bodies := RecordingProxy(t, e)
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--router", "rules"}, "ANTHROPIC_BASE_URL="+url)
	e.MustCLI(0, "skills", "add", WriteSkill(t, map[string]string{"SKILL.md": ReleaseNotesMD}))
	e.MustCLI(0, "skills", "add", WriteSkill(t, map[string]string{"SKILL.md": shellProbeMD}))
	e.MustAgent("writer", `{"metadata":{"name":"writer"},"spec":{"harness":"claude-agent","system":"You write release notes.","skills":["release-notes","shell-probe"],"tools":["write"],"approvals":"never-ask"}}`)
	e.StartRun("writer", "hsf", "Write the release notes for 1.2")
	got := e.AnswerOf("hsf")
	if !strings.Contains(got, "not-the-runs") {
		t.Errorf("the answer (the refused Skill call's result) is %q; want it to name the skill the run lacks", got)
	}
	bs := bodies()
	if len(bs) < 4 {
		t.Fatalf("%d model requests; want 4", len(bs))
	}
	listing := "The following skills are available for use with the Skill tool:"
	for _, want := range []string{listing, "- release-notes: Write release notes from a changelog, grouped by kind of change.", "- shell-probe: Probe whether"} {
		if !bytes.Contains(bs[0], []byte(want)) {
			t.Errorf("the first model request lacks %q", want)
		}
	}
	// Only the run's skills are listed: the listing has exactly its two entries.
	var first any
	if err := json.Unmarshal(bs[0], &first); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, text := range jsonStrings(first) {
		if strings.Contains(text, listing) {
			found = true
			if n := strings.Count(text, "\n- "); n != 2 {
				t.Errorf("the skill listing has %d entries; want the run's 2:\n%s", n, text)
			}
		}
	}
	if !found {
		t.Error("no text of the first model request holds the skill listing")
	}
	// The Skill tool put SKILL.md into the conversation the model reads next.
	if !bytes.Contains(bs[1], []byte("Read CHANGELOG.md.")) {
		t.Error("the model request after the Skill call does not carry release-notes' SKILL.md")
	}
	// Its inline shell was not run: the model reads no output of it (SHELL-RAN-42).
	if !bytes.Contains(bs[2], []byte("The marker:")) {
		t.Error("the model request after the second Skill call does not carry shell-probe's SKILL.md")
	}
	for i, b := range bs {
		if bytes.Contains(b, []byte("SHELL-RAN-42")) {
			t.Errorf("model request %d carries the output of the skill's inline shell: Claude Code ran it", i)
		}
	}
	evs := e.Events("hsf")
	if !HasEvent(evs, "skill.opened", "opened skill release-notes@1 (SKILL.md, with claude-agent's own Skill tool)") ||
		!HasEvent(evs, "skill.opened", "opened skill shell-probe@1") {
		t.Errorf("the timeline does not record the skills Claude Code's Skill tool opened: %v", evs)
	}
}

// jsonStrings are the strings a decoded JSON value holds, at any depth.
func jsonStrings(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, jsonStrings(e)...)
		}
		return out
	case map[string]any:
		var out []string
		for _, e := range x {
			out = append(out, jsonStrings(e)...)
		}
		return out
	}
	return nil
}

// TestOpenCodeSkillFolder: OpenCode gets the run's skills in its own skill folder
// (XDG_CONFIG_HOME/opencode/skills/NAME/SKILL.md): its first model request offers its skill tool
// listing the run's skill (and none of its own), and that tool loads SKILL.md into the
// conversation. OpenCode's skill tool needs ripgrep on the PATH (skipped without it).
func TestOpenCodeSkillFolder(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("rg"); err != nil {
		t.Skip("OpenCode's skill tool needs ripgrep: apt-get install ripgrep")
	}
	cache := InstalledHarness(t, "opencode")
	e := NewEnv(t, `
entries:
  - name: notes
    match: "Write the release notes"
    turns:
      - tool_calls:
          - name: skill
            input: {name: release-notes}
      - text: "done: {{last_tool_result}}"
`)
	e.Extra = append(e.Extra, harness.CacheEnv+"="+cache)
	url, bodies := RecordingProxy(t, e)
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--router", "rules"}, "ANTHROPIC_BASE_URL="+url)
	e.MustCLI(0, "skills", "add", WriteSkill(t, map[string]string{"SKILL.md": ReleaseNotesMD}))
	e.MustAgent("writer", `{"metadata":{"name":"writer"},"spec":{"harness":"opencode","system":"You write release notes.","skills":["release-notes"],"tools":["write"],"approvals":"never-ask"}}`)
	e.StartRun("writer", "hof", "Write the release notes for 1.2")
	got := e.AnswerOf("hof")
	bs := bodies()
	if len(bs) < 2 {
		t.Fatalf("%d model requests; want 2", len(bs))
	}
	// OpenCode's prompt lists the run's skill, and only it, for its skill tool.
	var first any
	if err := json.Unmarshal(bs[0], &first); err != nil {
		t.Fatal(err)
	}
	listed := false
	for _, text := range jsonStrings(first) {
		if i := strings.Index(text, "<available_skills>"); i >= 0 {
			listing := text[i:]
			listed = strings.Contains(listing, "<name>release-notes</name>") && strings.Contains(listing, "<description>Write release notes from a changelog")
			if n := strings.Count(listing, "<skill>"); n != 1 {
				t.Errorf("OpenCode's skill listing has %d skills; want the run's one:\n%s", n, listing)
			}
		}
	}
	if !listed {
		t.Error("the first model request has no <available_skills> listing the run's skill")
	}
	// The tool's result (the answer repeats it) is SKILL.md as OpenCode loads it.
	if !strings.Contains(got, `<skill_content name="release-notes">`) || !strings.Contains(got, "Read CHANGELOG.md.") {
		t.Errorf("OpenCode's skill tool did not load SKILL.md into the conversation (answer %q)", got)
	}
}

// TestCodexSkillFolder: Codex gets the run's skills in its own skill folder
// (CODEX_HOME/skills/NAME/SKILL.md), where its loader finds them: an input that names one as
// `$release-notes` (Codex's explicit invocation) makes Codex itself put that SKILL.md into its
// first model request. (Its list of skills for implicit use stays off: it tells the model to open
// SKILL.md with Codex's shell, which is off; the run's skill tool is the way there.)
func TestCodexSkillFolder(t *testing.T) {
	t.Parallel()
	e := NewCodexEnv(t, `
entries:
  - name: notes
    match: "Write the release notes"
    turns:
      - text: "done"
`)
	url, bodies := RecordingProxy(t, e)
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--router", "rules"}, "OPENAI_BASE_URL="+url+"/v1")
	e.MustCLI(0, "skills", "add", WriteSkill(t, map[string]string{"SKILL.md": ReleaseNotesMD}))
	e.MustAgent("writer", `{"metadata":{"name":"writer"},"spec":{"harness":"codex","system":"You write release notes.","skills":["release-notes"],"tools":["write"],"approvals":"never-ask"}}`)
	e.StartRun("writer", "hcf", "Write the release notes for 1.2 with $release-notes")
	e.AnswerOf("hcf")
	bs := bodies()
	if len(bs) == 0 {
		t.Fatal("no model request")
	}
	var first struct {
		Input []struct {
			Role    string `json:"role"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"input"`
	}
	if err := json.Unmarshal(bs[0], &first); err != nil {
		t.Fatal(err)
	}
	injected := false
	for _, it := range first.Input {
		for _, c := range it.Content {
			if it.Role == "user" && strings.HasPrefix(c.Text, "<skill>\n<name>release-notes</name>") && strings.Contains(c.Text, "/codex/skills/release-notes/SKILL.md</path>") && strings.Contains(c.Text, "1. Read CHANGELOG.md.") {
				injected = true
			}
		}
	}
	if !injected {
		t.Errorf("Codex did not put release-notes' SKILL.md from its skill folder into its first request:\n%s", bs[0])
	}
}

// TestPiSkillFolder: pi gets the run's skills in its own skill folder
// (PI_CODING_AGENT_DIR/skills/NAME/SKILL.md): an input that starts /skill:release-notes (pi's
// explicit invocation) makes pi itself put that SKILL.md into its first model request. pi's own
// prompt list of skills stays empty even with a read tool (it would have the model read SKILL.md
// by a path the run's read tool does not reach).
func TestPiSkillFolder(t *testing.T) {
	t.Parallel()
	cache := InstalledHarness(t, "pi")
	e := NewEnv(t, `
entries:
  - name: notes
    match: "Write the release notes"
    turns:
      - text: "done"
`)
	e.Extra = append(e.Extra, harness.CacheEnv+"="+cache)
	url, bodies := RecordingProxy(t, e)
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--router", "rules"}, "ANTHROPIC_BASE_URL="+url)
	e.MustCLI(0, "skills", "add", WriteSkill(t, map[string]string{"SKILL.md": ReleaseNotesMD}))
	e.MustAgent("writer", `{"metadata":{"name":"writer"},"spec":{"harness":"pi","system":"You write release notes.","skills":["release-notes"],"tools":["write","read"],"approvals":"never-ask"}}`)
	e.StartRun("writer", "hpf", "/skill:release-notes Write the release notes for 1.2")
	e.AnswerOf("hpf")
	bs := bodies()
	if len(bs) == 0 {
		t.Fatal("no model request")
	}
	var first any
	if err := json.Unmarshal(bs[0], &first); err != nil {
		t.Fatal(err)
	}
	injected := false
	for _, text := range jsonStrings(first) {
		if strings.HasPrefix(text, `<skill name="release-notes" location="`) && strings.Contains(text, "/pi-agent/skills/release-notes/SKILL.md") &&
			strings.Contains(text, "1. Read CHANGELOG.md.") && strings.HasSuffix(text, "</skill>\n\nWrite the release notes for 1.2") {
			injected = true
		}
		if strings.Contains(text, "<available_skills>") {
			t.Errorf("pi listed skills for its read tool:\n%s", text)
		}
	}
	if !injected {
		t.Errorf("pi did not put release-notes' SKILL.md from its skill folder into its first request:\n%s", bs[0])
	}
}

// TestClaudeSkillTakeover: a claude-agent run that loaded a skill with Claude Code's Skill tool is
// taken over on PostgreSQL by a runner with another data folder. Claude Code names the skill's
// folder under its home in the next request ("Base directory for this skill: ..."), which differs
// on runner b; the replay check puts a placeholder for the home, so b replays the journal (each
// scripted turn reaches the model server once, dev_count runs once) instead of parking
// ReplayDiverged.
func TestClaudeSkillTakeover(t *testing.T) {
	t.Parallel()
	c := NewCluster(t, `
entries:
  - name: skilltk
    match: "Write the release notes"
    turns:
      - tool_calls:
          - name: Skill
            input: {skill: release-notes}
      - tool_calls:
          - name: mcp__agentrun__dev_count
            input: {label: "skilltk"}
      - text: "finished"
`)
	c.Extra = append(c.Extra, harness.CacheEnv+"="+ClaudeHarness(t))
	c.StartServer()
	c.MustCLI(0, "skills", "add", WriteSkill(t, map[string]string{"SKILL.md": ReleaseNotesMD}))
	c.MustAgent("writer", `{"metadata":{"name":"writer"},"spec":{"harness":"claude-agent","skills":["release-notes"],"tools":["dev_count"]}}`)
	extra := c.Extra
	c.Extra = append(slices.Clone(extra), "AGENTRUN_DEV_PAUSE_AT=after-result:t1/tool/0")
	a := c.StartRunner("a")
	c.Extra = extra
	c.StartRun("writer", "stk", "Write the release notes for 1.2")
	for deadline := time.Now().Add(90 * time.Second); !strings.Contains(a.Stderr.String(), "AGENTRUN_DEV_PAUSED after-result t1/tool/0"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("runner a never reached t1/tool/0; its stderr:\n%s", Tail(a.Stderr.String(), 4000))
		}
	}
	a.Kill()
	NoHarnessLeft(t, filepath.Join(c.Dir, "runner-a"), 10*time.Second)
	c.StartRunner("b")
	r := c.WaitPhase("stk", 90*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseNeedsResolution, api.PhaseWaiting)
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Runner != "b" {
		t.Fatalf("stk: %s/%s %s on runner %q; want Succeeded on b", r.Status.Phase, r.Status.Reason, r.Status.Message, r.Status.Runner)
	}
	if got := c.Counted(); !slices.Equal(got, []string{"skilltk"}) {
		t.Errorf("dev_count ran %v, want once", got)
	}
	for turn := 0; turn < 3; turn++ {
		if n := c.Model.CountTurn("skilltk", turn); n != 1 {
			t.Errorf("scripted turn %d reached the model server %d times, want 1", turn, n)
		}
	}
	n := 0
	for _, ev := range c.Events("stk") {
		if ev.Type == api.EventSkillOpened {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d skill.opened events; want 1 (not again when runner b replays the call)", n)
	}
}
