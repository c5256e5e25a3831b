package policy

import (
	"encoding/json"
	"strings"
	"testing"
)

func in(k, v string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{k: v})
	return b
}

func TestDecide(t *testing.T) {
	t.Parallel()
	spec := Spec{Default: Ask, Rules: []Rule{
		{Match: "bash(go test *)", Action: Allow},
		{Match: "bash(rm *)", Action: Deny},
		{Match: "write(docs/**)", Action: Allow},
		{Match: "write(*.md)", Action: Allow},
		{Match: "read", Action: Allow},
	}}
	deny := []string{"bash(curl *)", "web_fetch"}
	cases := []struct {
		spec       Spec
		tool       string
		input      json.RawMessage
		want, rule string
	}{
		{spec, "bash", in("command", "go test ./..."), Allow, "rule 1: bash(go test *)"},
		{spec, "bash", in("command", "rm -rf /"), Deny, "rule 2: bash(rm *)"},
		{spec, "bash", in("command", "make"), Ask, "default"},
		{spec, "bash", in("command", "curl http://x"), Deny, "server deny: bash(curl *)"},
		{spec, "write", in("path", "docs/a/b.md"), Allow, "rule 3: write(docs/**)"},
		{spec, "write", in("path", "/workspace/docs/x.txt"), Allow, "rule 3: write(docs/**)"},
		{spec, "write", in("path", "notes.md"), Allow, "rule 4: write(*.md)"},
		{spec, "write", in("path", "sub/notes.md"), Ask, "default"},
		{spec, "write", in("path", "docs/../secret.txt"), Ask, "default"},
		{spec, "read", in("path", "anything"), Allow, "rule 5: read"},
		{Spec{NeverAsk: true, Default: Ask}, "bash", in("command", "make"), Allow, "default (never-ask)"},
		{Spec{NeverAsk: true}, "web_fetch", in("url", "http://x"), Deny, "server deny: web_fetch"},
		{Spec{}, "edit", in("path", "x"), Allow, "default"},
	}
	for _, c := range cases {
		got := Decide(c.spec, deny, c.tool, c.input)
		if got.Action != c.want || got.Rule != c.rule {
			t.Errorf("%s %s: got %+v, want %s by %q", c.tool, c.input, got, c.want, c.rule)
		}
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	bad := []struct {
		s     Spec
		field string
	}{
		{Spec{Default: "maybe"}, "default"},
		{Spec{Rules: []Rule{{Match: "bash", Action: "sometimes"}}}, "rules[0].action"},
		{Spec{Rules: []Rule{{Match: "bash()", Action: Allow}}}, "rules[0].match"},
		{Spec{Rules: []Rule{{Match: "Bash Tool", Action: Allow}}}, "rules[0].match"},
	}
	for _, b := range bad {
		if f, err := Validate(b.s); err == nil || f != b.field {
			t.Errorf("%+v: field %q err %v, want an error at %s", b.s, f, err, b.field)
		}
	}
	if f, err := Validate(Spec{Default: Deny, Rules: []Rule{{Match: "*", Action: Ask}, {Match: "write(**)", Action: Allow}}}); err != nil {
		t.Errorf("valid spec refused at %s: %v", f, err)
	}
}

// Issue 24: an ask beside neverAsk would never ask; it is refused, naming the ask's field and
// neverAsk.
func TestValidateNeverAskWithAsk(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		s     Spec
		field string
	}{
		{Spec{NeverAsk: true, Rules: []Rule{{Match: "bash(go test *)", Action: Allow}, {Match: "web_fetch", Action: Ask}}}, "rules[1].action"},
		{Spec{NeverAsk: true, Default: Ask}, "default"},
	} {
		f, err := Validate(c.s)
		if err == nil || f != c.field || !strings.Contains(err.Error(), "neverAsk") {
			t.Errorf("%+v: field %q err %v, want an error at %s naming neverAsk", c.s, f, err, c.field)
		}
	}
	for _, s := range []Spec{{NeverAsk: true}, {NeverAsk: true, Default: Deny, Rules: []Rule{{Match: "bash(rm *)", Action: Deny}, {Match: "bash", Action: Allow}}},
		{Default: Ask, Rules: []Rule{{Match: "bash", Action: Ask}}}} {
		if f, err := Validate(s); err != nil {
			t.Errorf("%+v refused at %s: %v", s, f, err)
		}
	}
}
