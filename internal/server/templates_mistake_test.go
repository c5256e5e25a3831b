package server

import (
	"testing"

	"agentrun.dev/agentrun/internal/api"
)

// A template whose skill has one mistake (a file path) is told that one mistake: the agent that
// lists the skill is not also told the skill "is not stored", as if the template did not bring it.
func TestTemplateOneSkillMistakeIsOneError(t *testing.T) {
	ts, _ := newTestServer(t)
	for _, c := range []struct{ what, files, field string }{
		{"a file's path", `{"path":"SKILL.md","content":"---\nname: helper\ndescription: helps\n---\nbody\n"},{"path":"/abs","content":"x"}`,
			"skills[0].spec.files[1].path"},
		// SKILL.md itself is wrong: which skill it is cannot be known.
		{"SKILL.md's front matter", `{"path":"SKILL.md","content":"no front matter"}`, "skills[0].SKILL.md"},
	} {
		body := `{"agent":{"metadata":{"name":"tpl-agent"},"spec":{"system":"hi","skills":["helper"]}},
		  "skills":[{"spec":{"files":[` + c.files + `]}}]}`
		r := do(t, ts, "POST", "/v2/templates/apply", testToken, []byte(body))
		if r.status != 422 {
			t.Fatalf("%s: HTTP %d %s, want 422", c.what, r.status, r.body)
		}
		e := r.errBody(t)
		if e.Code != api.CodeInvalid || e.Field != c.field {
			t.Errorf("%s: error %s at %s, want %s at %s", c.what, e.Code, e.Field, api.CodeInvalid, c.field)
		}
		for _, fe := range e.Errors[1:] {
			t.Errorf("%s: one mistake told as more: also %s at %s: %s", c.what, fe.Code, fe.Field, fe.Message)
		}
	}
}
