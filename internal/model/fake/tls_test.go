package fake

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"strings"
	"testing"
)

// StartTLS serves the script over HTTPS with HTTP/2 to a client that trusts the certificate it
// returns, and refuses a client that does not.
func TestStartTLSServesHTTP2(t *testing.T) {
	srv, url, certPEM, err := StartTLS(mustParse(t, "entries:\n- turns: [{text: hello over h2}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if !strings.HasPrefix(url, "https://127.0.0.1:") {
		t.Fatalf("url = %q, want https://127.0.0.1:PORT", url)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(certPEM) {
		t.Fatal("the returned certificate is not PEM")
	}
	body := `{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	do := func(hc *http.Client) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodPost, url+"/v1/messages", strings.NewReader(body))
		for k, v := range antKey {
			req.Header.Set(k, v)
		}
		return hc.Do(req)
	}
	resp, err := do(&http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ProtoMajor != 2 || !strings.Contains(string(b), "hello over h2") {
		t.Errorf("reply: %s %s %s, want 200 over HTTP/2 with the scripted text", resp.Proto, resp.Status, b)
	}
	if _, err := do(&http.Client{}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a client without the certificate: err = %v, want a certificate error", err)
	}
}
