package e2etest

import (
	"regexp"
)

// PersonSession signs the first person in with the setup code the server printed.
func (e *Env) PersonSession() string {
	e.T.Helper()
	m := regexp.MustCompile(`setup code: ([0-9A-F]+)`).FindStringSubmatch(e.Stderr.String())
	if m == nil {
		e.T.Fatalf("no setup code printed:\n%s", e.Stderr.String())
	}
	var out struct {
		Session string `json:"session"`
	}
	body := `{"password": "correct horse battery staple", "setupCode": "` + m[1] + `"}`
	if st := e.DoAs("", "POST", "/v2/login", body, &out); st != 200 || out.Session == "" {
		e.T.Fatalf("login: HTTP %d", st)
	}
	return out.Session
}
