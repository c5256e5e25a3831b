package console

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/secret"
)

func (tc *testConsole) postForm(t *testing.T, path, session string, form url.Values, hdr ...string) (*http.Response, string) {
	t.Helper()
	resp := tc.do(t, context.Background(), "POST", path, session, strings.NewReader(form.Encode()), append([]string{"Content-Type", "application/x-www-form-urlencoded"}, hdr...)...)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func sealedConsole(t *testing.T) *testConsole {
	t.Helper()
	tc := newTestConsole(t)
	box, err := secret.New([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	tc.Seal = box
	return tc
}

// A bad secret name stays on the page with the error beside the field, its value not rendered,
// and nothing is stored; a good paste is listed by name and key only.
func TestSettingsSecretErrors(t *testing.T) {
	t.Parallel()
	tc := sealedConsole(t)
	csrf := csrfToken(&http.Request{Header: http.Header{"Cookie": {cookieName + "=" + tc.session}}})
	const value = "very-secret-value-0a9b8c7d"
	resp, page := tc.postForm(t, "/settings/secrets", tc.session, url.Values{"csrf": {csrf}, "name": {"Bad Name"}, "value": {value}})
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(page, `data-field="name"`) || !strings.Contains(page, `value="Bad Name"`) {
		t.Errorf("bad name: HTTP %d\n%s", resp.StatusCode, page)
	}
	if strings.Contains(page, value) {
		t.Error("the refused form renders the value back")
	}
	if list, _ := tc.st.ListSecrets(context.Background()); len(list) != 0 {
		t.Errorf("a refused form stored %v", list)
	}
	resp, page = tc.postForm(t, "/settings/secrets", tc.session, url.Values{"csrf": {csrf}, "name": {"api"}, "key": {"bad key"}, "value": {value}})
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(page, `data-field="key"`) {
		t.Errorf("bad key: HTTP %d\n%s", resp.StatusCode, page)
	}
	resp, _ = tc.postForm(t, "/settings/secrets", tc.session, url.Values{"csrf": {csrf}, "name": {"api"}, "value": {value}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("paste: HTTP %d", resp.StatusCode)
	}
	_, page = tc.body(t, "/settings/secrets")
	if !strings.Contains(page, `data-secret="api"`) || !strings.Contains(page, "<code>value</code>: set") || strings.Contains(page, value) {
		t.Errorf("the listing:\n%s", page)
	}
	m, err := (&secret.Opener{Box: tc.Seal, Store: tc.st}).Open(context.Background(), "api")
	if err != nil || m["value"] != value {
		t.Errorf("stored %v, %v", m, err)
	}
	// The model keys are a secret too, but not one listed.
	resp, _ = tc.postForm(t, "/settings/model-keys/anthropic", tc.session, url.Values{"csrf": {csrf}, "ANTHROPIC_API_KEY": {"sk-ant-x"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("paste a model key: HTTP %d", resp.StatusCode)
	}
	if _, page = tc.body(t, "/settings/secrets"); strings.Contains(page, secret.ModelKeys) {
		t.Errorf("the secrets page lists the model keys:\n%s", page)
	}
	resp, page = tc.postForm(t, "/settings/model-keys/openai", tc.session, url.Values{"csrf": {csrf}, "OPENAI_API_KEY": {"sk-x"}, "OPENAI_BASE_URL": {"ftp://x"}})
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(page, `data-field="OPENAI_BASE_URL"`) {
		t.Errorf("a bad base URL: HTTP %d\n%s", resp.StatusCode, page)
	}
	// Without a session, or with a bearer credential, nothing is taken.
	for _, hdr := range [][]string{nil, {"Authorization", "Bearer some-token"}} {
		resp, _ = tc.postForm(t, "/settings/secrets", "", url.Values{"name": {"other"}, "value": {value}}, hdr...)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("a post without a session (%v): HTTP %d, want 403", hdr, resp.StatusCode)
		}
	}
}
