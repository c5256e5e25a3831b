package runs

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

const skillScript = `
entries:
  - name: notes
    match: "Write the release notes"
    turns:
      - tool_calls:
          - name: skill
            input: {name: release-notes}
      - tool_calls:
          - name: skill
            input: {name: release-notes, file: template.md}
      - text: "done: {{last_tool_result}}"
`

// TestSkills: skills add, list and show through the CLI (a second add of other content is
// version 2, the same content again changes nothing); a folder without front matter or over
// 1 MiB is refused with a code and field and stores nothing; an agent naming an unknown skill
// is refused with the field path; an agent naming a skill is pinned to its version, its run's
// first model request carries the skill's name and description (seen on the wire by a proxy in
// front of the scripted model server), and the skill tool returns SKILL.md and a file beside
// it, with skill.opened on the timeline.
func TestSkills(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, skillScript)
	// A recording proxy in front of the scripted model server: the bodies as the vendor gets them.
	var mu sync.Mutex
	var bodies [][]byte
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		e.Model.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--router", "rules"}, "ANTHROPIC_BASE_URL="+proxy.URL)

	v1 := WriteSkill(t, map[string]string{"SKILL.md": ReleaseNotesMD, "template.md": "## Added\n\n## Fixed\n", ".git/config": "ignored"})
	if r := e.MustCLI(0, "skills", "add", v1); strings.TrimSpace(r.Stdout) != "skill/release-notes@1 created" {
		t.Errorf("skills add: %q", r.Stdout)
	}
	if r := e.MustCLI(0, "skills", "add", v1); strings.TrimSpace(r.Stdout) != "skill/release-notes@1 unchanged" {
		t.Errorf("skills add again: %q", r.Stdout)
	}
	v2 := WriteSkill(t, map[string]string{"SKILL.md": ReleaseNotesMD + "3. Ask before publishing.\n"})
	if r := e.MustCLI(0, "skills", "add", v2); strings.TrimSpace(r.Stdout) != "skill/release-notes@2 created" {
		t.Errorf("skills add of new content: %q", r.Stdout)
	}
	list := e.MustCLI(0, "skills", "list").Stdout
	if !strings.Contains(list, "release-notes") || strings.Count(list, "release-notes") != 2 || !strings.Contains(list, "Write release notes from a changelog") {
		t.Errorf("skills list:\n%s", list)
	}
	if show := e.MustCLI(0, "skills", "show", "release-notes@1").Stdout; !strings.Contains(show, "skill/release-notes@1") || !strings.Contains(show, "template.md (19 bytes)") ||
		!strings.HasSuffix(show, ReleaseNotesMD) || strings.Contains(show, ".git") {
		t.Errorf("skills show release-notes@1:\n%s", show)
	}
	if show := e.MustCLI(0, "skills", "show", "release-notes").Stdout; !strings.Contains(show, "skill/release-notes@2") || !strings.Contains(show, "Ask before publishing") {
		t.Errorf("skills show release-notes (latest):\n%s", show)
	}
	if r := e.CLI(e.Dir, "skills", "show", "release-notes@9"); r.Code != 1 || !strings.Contains(r.Stderr, "code NotFound") {
		t.Errorf("skills show of a missing version: exit %d %s", r.Code, r.Stderr)
	}

	// Refused folders store nothing.
	bad := []struct {
		name, want string
		files      map[string]string
	}{
		{"no front matter", "(code Invalid, field SKILL.md)", map[string]string{"SKILL.md": "# just markdown\n"}},
		{"no description", "(code Required, field SKILL.md: description)", map[string]string{"SKILL.md": "---\nname: nodesc\n---\nbody\n"}},
		{"no SKILL.md", "(code Required, field spec.files)", map[string]string{"README.md": "hi"}},
		{"a key twice", "(code Invalid, field SKILL.md)", map[string]string{"SKILL.md": "---\nname: twice\nname: other\ndescription: d\n---\nbody\n"}},
		{"over 1 MiB", "(code PayloadTooLarge, field spec.files)", map[string]string{"SKILL.md": "---\nname: big\ndescription: big\n---\n", "data.bin": strings.Repeat("x", api.MaxSkillBytes)}},
	}
	for _, b := range bad {
		r := e.CLI(e.Dir, "skills", "add", WriteSkill(t, b.files))
		if r.Code != 1 || !strings.Contains(r.Stderr, b.want) {
			t.Errorf("%s: exit %d, stderr %q; want %s", b.name, r.Code, r.Stderr, b.want)
		}
	}
	// Over 1 MiB sent straight to the API (the CLI stops before sending) is refused the same way.
	big := api.Skill{Spec: api.SkillSpec{Files: []api.SkillFile{{Path: "SKILL.md", Content: "---\nname: big\ndescription: big\n---\n"}, {Path: "data.bin", Content: strings.Repeat("x", api.MaxSkillBytes)}}}}
	var apiErr api.Error
	if st := e.Do("POST", "/v2/skills", big, &apiErr); st != 413 || apiErr.Code != api.CodeTooLarge || apiErr.Field != "spec.files" {
		t.Errorf("POST /v2/skills over 1 MiB: HTTP %d %+v", st, apiErr)
	}
	var all struct{ Items []api.Skill }
	e.Do("GET", "/v2/skills", nil, &all)
	if len(all.Items) != 2 {
		t.Errorf("after the refusals %d skill versions are stored, want 2", len(all.Items))
	}
	// A symbolic link in the folder is left out, and the user is told.
	linked := WriteSkill(t, map[string]string{"SKILL.md": "---\nname: linked\ndescription: d\n---\nbody\n"})
	if err := os.Symlink("/etc/hostname", filepath.Join(linked, "host.txt")); err != nil {
		t.Fatal(err)
	}
	if r := e.MustCLI(0, "skills", "add", linked); !strings.Contains(r.Stderr, "left out host.txt: a symbolic link") {
		t.Errorf("skills add of a folder with a link: stderr %q", r.Stderr)
	}
	if show := e.MustCLI(0, "skills", "show", "linked").Stdout; strings.Contains(show, "host.txt") {
		t.Errorf("the link was stored:\n%s", show)
	}

	apiErr = api.Error{}
	if st := e.Do("PUT", "/v2/agents/ghost", `{"metadata":{"name":"ghost"},"spec":{"skills":["release-notes","no-such-skill"],"computer":{"kind":"none"}}}`, &apiErr); st != 422 || apiErr.Field != "spec.skills[1]" || !strings.Contains(apiErr.Message, "no-such-skill") {
		t.Errorf("agent naming an unknown skill: HTTP %d %+v", st, apiErr)
	}
	apiErr = api.Error{}
	if st := e.Do("PUT", "/v2/agents/ghost", `{"metadata":{"name":"ghost"},"spec":{"skills":["release-notes@7"],"computer":{"kind":"none"}}}`, &apiErr); st != 422 || apiErr.Field != "spec.skills[0]" {
		t.Errorf("agent naming an unknown version: HTTP %d %+v", st, apiErr)
	}

	var ag api.Agent
	if st := e.Do("PUT", "/v2/agents/writer", `{"metadata":{"name":"writer"},"spec":{"system":"You write release notes.","skills":["release-notes@1"],"computer":{"kind":"none"},"approvals":"never-ask"}}`, &ag); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	if len(ag.Spec.Skills) != 1 || ag.Spec.Skills[0] != "release-notes@1" || !Contains(ag.Status.Tools, "skill") {
		t.Errorf("agent: skills %v, tools %v", ag.Spec.Skills, ag.Status.Tools)
	}
	var latest api.Agent
	e.Do("PUT", "/v2/agents/latest", `{"metadata":{"name":"latest"},"spec":{"skills":["release-notes"],"computer":{"kind":"none"}}}`, &latest)
	if len(latest.Spec.Skills) != 1 || latest.Spec.Skills[0] != "release-notes@2" {
		t.Errorf("an agent naming the skill without a version is pinned to %v, want release-notes@2", latest.Spec.Skills)
	}

	e.StartRun("writer", "sk-run", "Write the release notes for 1.2")
	got := e.AnswerOf("sk-run")
	if !strings.Contains(got, "done: ## Added") {
		t.Errorf("answer: %q", got)
	}
	res := e.ToolResults("sk-run")
	if r := res["t0/tool/0"]; r.IsError || !strings.HasPrefix(r.Content, ReleaseNotesMD) || !strings.Contains(r.Content, "template.md") {
		t.Errorf("the skill tool's SKILL.md: %+v", r)
	}
	if r := res["t1/tool/0"]; r.IsError || r.Content != "## Added\n\n## Fixed\n" {
		t.Errorf("the skill tool's template.md: %+v", r)
	}
	if !HasEvent(e.Events("sk-run"), "skill.opened", "release-notes@1 (SKILL.md)") || !HasEvent(e.Events("sk-run"), "skill.opened", "release-notes@1 (template.md)") {
		t.Error("the timeline does not say which skills the run opened")
	}

	mu.Lock()
	defer mu.Unlock()
	var first struct {
		System json.RawMessage `json:"system"`
		Tools  []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	for _, b := range bodies {
		if bytes.Contains(b, []byte("Write the release notes for 1.2")) {
			if err := json.Unmarshal(b, &first); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	sys := string(first.System)
	if !strings.Contains(sys, "You write release notes.") || !strings.Contains(sys, "release-notes: Write release notes from a changelog, grouped by kind of change.") {
		t.Errorf("the first model request's system prompt lacks the skill: %s", sys)
	}
	var names []string
	for _, tl := range first.Tools {
		names = append(names, tl.Name)
	}
	if !Contains(names, "skill") {
		t.Errorf("the first model request offers %v, not the skill tool", names)
	}
}
