package template

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"agentrun.dev/agentrun/internal/api"
)

// Every embedded template parses and validates, with its instructions, triggers and cases.
func TestEmbeddedTemplatesLoad(t *testing.T) {
	want := []string{"code-review", "inbound-lead", "kyb", "market-monitor", "release-notes"}
	if got := Names(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	for _, n := range Names() {
		f, _ := Embedded(n)
		tp, err := Load(f, Options{})
		if err != nil {
			t.Fatalf("template %s: %v", n, err)
		}
		if tp.Apply.Agent.Metadata.Name != n || tp.Apply.Agent.Metadata.Labels[api.TemplateLabel] != n {
			t.Errorf("%s: agent %+v", n, tp.Apply.Agent.Metadata)
		}
		if tp.Apply.Agent.Spec.System == "" || len(tp.Cases) == 0 || tp.Readme == "" {
			t.Errorf("%s: system %d bytes, %d cases, readme %d bytes", n, len(tp.Apply.Agent.Spec.System), len(tp.Cases), len(tp.Readme))
		}
		if strings.Contains(tp.Apply.Agent.Spec.System, "$(") {
			t.Errorf("%s: a parameter is left in the instructions", n)
		}
		for _, tr := range tp.Apply.Triggers {
			if !strings.HasPrefix(tr.Metadata.Name, n+"-") || tr.Spec.Agent != n {
				t.Errorf("%s: trigger %s runs %s", n, tr.Metadata.Name, tr.Spec.Agent)
			}
		}
	}
}

// The seed's particulars: code-review's GitHub trigger, market-monitor's Monday schedule and
// learning, inbound-lead's Standard Webhooks trigger, skills named by the agents.
func TestTemplateParticulars(t *testing.T) {
	load := func(n string, opt Options) *Template {
		f, _ := Embedded(n)
		tp, err := Load(f, opt)
		if err != nil {
			t.Fatal(err)
		}
		return tp
	}
	cr := load("code-review", Options{Name: "rev", Set: map[string]string{"repository": "me/app"}})
	if len(cr.Apply.Triggers) != 1 || cr.Apply.Triggers[0].Metadata.Name != "rev-pull-request" {
		t.Fatalf("code-review triggers: %+v", cr.Apply.Triggers)
	}
	gh := cr.Apply.Triggers[0].Spec.GitHub
	if gh == nil || strings.Join(gh.Actions, ",") != "opened,synchronize,reopened" || strings.Join(gh.Repositories, ",") != "me/app" {
		t.Fatalf("code-review github: %+v", gh)
	}
	if cr.Apply.Agent.Spec.Computer.Kind != "sandbox" || len(cr.Apply.Skills) != 1 || cr.Apply.Agent.Spec.Skills[0] != "verify-finding" {
		t.Fatalf("code-review agent: %+v skills %d", cr.Apply.Agent.Spec, len(cr.Apply.Skills))
	}
	mm := load("market-monitor", Options{})
	if s := mm.Apply.Triggers[0].Spec.Schedule; s == nil || s.Cron != "0 8 * * MON" || s.TimeZone != "" {
		t.Fatalf("market-monitor schedule: %+v", s)
	}
	if !mm.Apply.Agent.Spec.Learning {
		t.Fatal("market-monitor does not learn")
	}
	il := load("inbound-lead", Options{})
	if il.Apply.Triggers[0].Spec.Webhook == nil {
		t.Fatal("inbound-lead has no webhook trigger")
	}
}

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var good = map[string]string{
	"template.yaml":         "name: mine\ndescription: a test template\nagent:\n  tools: [web_fetch]\n",
	"instructions.md":       "Do the thing.\n",
	"README.md":             "# mine\n",
	"eval/cases/one.yaml":   "input: say hi\ngrader: {kind: regex, pattern: hi}\n",
	"triggers/nightly.yaml": "spec:\n  schedule: {cron: \"0 3 * * *\"}\n",
	"skills/howto/SKILL.md": "---\nname: howto\ndescription: how\n---\nDo it.\n",
}

// A folder on disk with an error is refused naming the file and the field path in it.
func TestErrorsNameFileAndField(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, good)
	if _, err := Load(os.DirFS(dir), Options{}); err != nil {
		t.Fatalf("the good folder: %v", err)
	}
	cases := []struct {
		file, content, wantFile, wantField string
		code                               api.Code
	}{
		{"template.yaml", "name: mine\ndescription: x\nagent:\n  tools: [web_fetch, nope]\n", "template.yaml", "agent.tools[1]", api.CodeInvalid},
		{"template.yaml", "name: mine\ndescription: x\nagent:\n  computr: {}\n", "template.yaml", "agent.computr", api.CodeUnknownField},
		{"template.yaml", "name: mine\ndescription: x\nagent:\n  approvals: {rules: [{match: bash, action: maybe}]}\n", "template.yaml", "agent.approvals.rules[0].action", api.CodeInvalid},
		{"template.yaml", "name: mine\ndescription: x\nagent:\n  mcpServers: [{name: gh, command: gh-mcp, tools: [create_issue]}]\n", "template.yaml", "agent.mcpServers[0].tools", api.CodeInvalid},
		{"triggers/nightly.yaml", "spec:\n  schedule: {cron: \"0 3 * *\"}\n", "triggers/nightly.yaml", "spec.schedule.cron", api.CodeInvalid},
		{"triggers/nightly.yaml", "spec:\n  schedule: {cron: \"0 3 * * *\", timeZone: Mars/Base}\n", "triggers/nightly.yaml", "spec.schedule.timeZone", api.CodeInvalid},
		{"eval/cases/one.yaml", "input: hi\ngrader: {kind: vibes}\n", "eval/cases/one.yaml", "grader.kind", api.CodeInvalid},
		{"eval/cases/one.yaml", "grader: {kind: exact}\n", "eval/cases/one.yaml", "input", api.CodeRequired},
		{"skills/howto/SKILL.md", "no front matter\n", "skills/howto/SKILL.md", "SKILL.md", api.CodeInvalid},
		{"workflow.json", `{"kind": "chain", "steps": [{"kind": "nope"}]}`, "workflow.json", "/v", api.CodeInvalid},
	}
	for _, c := range cases {
		d := t.TempDir()
		write(t, d, good)
		write(t, d, map[string]string{c.file: c.content})
		_, err := Load(os.DirFS(d), Options{})
		te, ok := err.(*Error)
		if !ok {
			t.Errorf("%s %q: error %v (%T), want a template error", c.file, c.content, err, err)
			continue
		}
		if te.File != c.wantFile || !strings.HasPrefix(te.Err.Field, c.wantField) || te.Err.Code != c.code {
			t.Errorf("%s %q: got %s field %q code %s, want %s field %q code %s (%v)", c.file, c.content, te.File, te.Err.Field, te.Err.Code, c.wantFile, c.wantField, c.code, err)
		}
	}
}

// --set takes only declared parameters, and fills $(NAME).
func TestParams(t *testing.T) {
	fs := fstest.MapFS{}
	for p, c := range good {
		fs[p] = &fstest.MapFile{Data: []byte(c)}
	}
	fs["template.yaml"] = &fstest.MapFile{Data: []byte("name: mine\ndescription: x\nparams:\n  who: {description: whom, default: world}\nagent: {}\n")}
	fs["instructions.md"] = &fstest.MapFile{Data: []byte("Greet $(who).")}
	tp, err := Load(fs, Options{})
	if err != nil || tp.Apply.Agent.Spec.System != "Greet world." {
		t.Fatalf("default: %v %q", err, tp.Apply.Agent.Spec.System)
	}
	tp, err = Load(fs, Options{Set: map[string]string{"who": "Ada"}})
	if err != nil || tp.Apply.Agent.Spec.System != "Greet Ada." {
		t.Fatalf("set: %v", err)
	}
	if _, err := Load(fs, Options{Set: map[string]string{"whom": "Ada"}}); err == nil || !strings.Contains(err.Error(), "no parameter \"whom\"") {
		t.Fatalf("unknown --set: %v", err)
	}
	fs["instructions.md"] = &fstest.MapFile{Data: []byte("Greet $(nobody).")}
	if _, err := Load(fs, Options{}); err == nil || !strings.Contains(err.Error(), "instructions.md") {
		t.Fatalf("unknown $(...): %v", err)
	}
}
