package cli

import (
	"bytes"
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/api"
)

// Money text puts the qualifier before the dollar sign.
func TestDollarsQualified(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"0.01": "$0.01", "at least 0.001504": "at least $0.001504",
		"at most 5.096079": "at most $5.096079", "unknown": "unknown", "": ""} {
		if got := dollars(in); got != want {
			t.Errorf("dollars(%q) = %q, want %q", in, got, want)
		}
	}
	if got := costOf(&api.RunCost{TotalUSD: "at least 0.5"}); got != "at least $0.5" {
		t.Errorf("costOf = %q", got)
	}
}

// A wrong password names the password, not the API token.
func TestDescribeWrongPassword(t *testing.T) {
	t.Parallel()
	got := describe(&api.Error{Status: 401, Code: api.CodeUnauthorized, Field: "password", Message: "wrong user or password"})
	if strings.Contains(got, "AGENTRUN_TOKEN") || !strings.Contains(got, "the user or the password is wrong") {
		t.Errorf("describe = %q", got)
	}
	got = describe(&api.Error{Status: 401, Code: api.CodeUnauthorized, Message: "missing or wrong credentials"})
	if !strings.Contains(got, "AGENTRUN_TOKEN") {
		t.Errorf("describe (token) = %q", got)
	}
}

// -o lists its formats without the empty default.
func TestCheckOutputList(t *testing.T) {
	t.Parallel()
	err := checkOutput("xml", "", "table", "wide", "json", "yaml", "name")
	if err == nil || !strings.Contains(err.Error(), `use one of table, wide, json, yaml, name`) || strings.Contains(err.Error(), "of ,") {
		t.Errorf("checkOutput = %v", err)
	}
}

// JSON for people keeps <, > and & as they are.
func TestWriteJSONNoHTMLEscape(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := writeJSON(&b, map[string]string{"detail": `bash {"command":"echo x > f && y"}`}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `echo x > f && y`) {
		t.Errorf("writeJSON: %s", b.String())
	}
	b.Reset()
	if err := writeRaw(&b, []byte(`{"input":{"command":"echo x \u003e f"}}`), "json"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"echo x > f"`) {
		t.Errorf("writeRaw: %s", b.String())
	}
}
