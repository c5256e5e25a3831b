package computer

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/model/fake"
)

// pages is the test site: a page with links, a long text, an endless redirect chain and a
// redirect to another port on loopback.
func pages(other string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><html><head><title>Docs</title><style>p{}</style></head><body>
<h1>Release notes</h1><p>Read <a href="/docs/install">the install guide</a> first.</p><ul><li>one</li><li>two</li></ul></body></html>`)
	})
	mux.HandleFunc("/docs/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, "docs page "+r.URL.Path)
	})
	mux.HandleFunc("/docs/jump", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/page", http.StatusFound) })
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, strings.Repeat("0123456789", 1000))
	})
	mux.HandleFunc("/count", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"fetched": true}`)
	})
	mux.HandleFunc("/loop/", func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscanf(strings.TrimPrefix(r.URL.Path, "/loop/"), "%d", &n)
		http.Redirect(w, r, fmt.Sprintf("/loop/%d", n+1), http.StatusFound)
	})
	mux.HandleFunc("/elsewhere", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+other+"/secret", http.StatusFound)
	})
	return mux
}

// fetchScript makes one entry per case: turn 0 calls web_fetch with the input, turn 1 answers
// with the tool's result.
func fetchScript(cases map[string]string) string {
	var b strings.Builder
	b.WriteString("entries:\n")
	for match, input := range cases {
		fmt.Fprintf(&b, "  - name: %q\n    match: %q\n    turns:\n      - tool_calls:\n          - name: web_fetch\n            input: %s\n      - text: \"result: {{last_tool_result}}\"\n", match, match, input)
	}
	return b.String()
}

// TestWebFetch runs web_fetch through the real binary against a local site that --fetch-allow
// opens: HTML comes back as markdown with its links made absolute, maxBytes cuts and says so,
// a sixth redirect is refused, a redirect to another port on loopback is refused naming the
// address (the other server sees nothing), a file:// URL is refused, and an agent whose
// computer has no network is refused before anything is fetched.
func TestWebFetch(t *testing.T) {
	t.Parallel()
	other := NewSite(t, http.NotFoundHandler())
	s := NewSite(t, pages(other.HostPort()))
	cases := map[string]string{
		"Fetch the page":  fmt.Sprintf(`{url: %q}`, s.URL+"/page"),
		"Fetch big":       fmt.Sprintf(`{url: %q, maxBytes: 100}`, s.URL+"/big"),
		"Fetch the loop":  fmt.Sprintf(`{url: %q}`, s.URL+"/loop/0"),
		"Fetch elsewhere": fmt.Sprintf(`{url: %q}`, s.URL+"/elsewhere"),
		"Fetch a file":    `{url: "file:///etc/passwd"}`,
		"Fetch offline":   fmt.Sprintf(`{url: %q}`, s.URL+"/docs/offline"),
		"Fetch unhoused":  fmt.Sprintf(`{url: %q}`, s.URL+"/docs/unhoused"),
	}
	e := NewEnv(t, fetchScript(cases))
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--fetch-allow", s.HostPort()})
	var caps map[string]any
	e.Do("GET", "/v2/capabilities", nil, &caps)
	if tools, _ := json.Marshal(caps["tools"]); !strings.Contains(string(tools), `"web_fetch"`) {
		t.Errorf("server capabilities' tools do not list web_fetch: %s", tools)
	}
	e.MustAgent("fetcher", `{"metadata":{"name":"fetcher"},"spec":{"tools":["web_fetch"],"computer":{"kind":"none","network":true},"approvals":"never-ask"}}`)
	e.MustAgent("offline", `{"metadata":{"name":"offline"},"spec":{"tools":["web_fetch"],"computer":{"kind":"none","network":false},"approvals":"never-ask"}}`)
	runs := map[string]string{"wf-page": "Fetch the page", "wf-big": "Fetch big", "wf-loop": "Fetch the loop", "wf-elsewhere": "Fetch elsewhere", "wf-file": "Fetch a file"}
	for name, input := range runs {
		e.StartRun("fetcher", name, input)
	}
	e.StartRun("offline", "wf-offline", "Fetch offline")
	e.MustAgent("unhoused", `{"metadata":{"name":"unhoused"},"spec":{"tools":["web_fetch"],"approvals":"never-ask"}}`)
	e.StartRun("unhoused", "wf-unhoused", "Fetch unhoused")

	got := e.AnswerOf("wf-page")
	for _, want := range []string{"Status: 200 OK", "# Release notes", "[the install guide](" + s.URL + "/docs/install)", "- one"} {
		if !strings.Contains(got, want) {
			t.Errorf("the page as markdown lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "<h1>") || strings.Contains(got, "p{}") {
		t.Errorf("the page came back as HTML:\n%s", got)
	}
	if got := e.AnswerOf("wf-big"); !strings.Contains(got, "0123456789"[:10]) || !strings.Contains(got, "[cut (code FetchCut): only the first 100 bytes of the body were read (maxBytes)") || strings.Count(got, "0123456789") != 10 {
		t.Errorf("maxBytes 100: %q", got)
	}
	if got := e.AnswerOf("wf-loop"); !strings.Contains(got, "stopped after 5 redirects") || !strings.Contains(got, "web_fetch refused "+s.URL+"/loop/6 (code FetchTooManyRedirects)") {
		t.Errorf("the redirect chain: %q", got)
	}
	if n := s.Count("/loop/5"); n != 1 || s.Count("/loop/6") != 0 {
		t.Errorf("the chain reached /loop/5 %d times and /loop/6 %d times; want 1 and 0", n, s.Count("/loop/6"))
	}
	if got := e.AnswerOf("wf-elsewhere"); !strings.Contains(got, other.HostPort()+" is a loopback address") || !strings.Contains(got, "--fetch-allow "+other.HostPort()) ||
		!strings.Contains(got, "web_fetch refused "+other.HostPort()+" (code FetchBlocked)") {
		t.Errorf("the redirect to another port: %q", got)
	}
	if n := other.Total(); n != 0 {
		t.Errorf("the other server got %d requests", n)
	}
	if got := e.AnswerOf("wf-file"); !strings.Contains(got, "only http:// and https:// URLs are fetched") || !strings.Contains(got, "result: web_fetch refused file:///etc/passwd (code FetchBadURL)") {
		t.Errorf("file URL: %q", got)
	}
	if got := e.AnswerOf("wf-offline"); !strings.Contains(got, "the agent has no computer (spec.computer.kind: none) and spec.computer.network is not true; to let web_fetch fetch, set spec.computer.network: true") || !strings.Contains(got, "(code FetchNetworkOff): "+s.URL+"/docs/offline") {
		t.Errorf("no network: %q", got)
	}
	// The refusal says what the definition has, not a setting the user never wrote.
	// An agent created without a computer is given the server's sandbox (kind none when it has
	// none): the refusal names the kind its definition now has.
	var unhoused api.Agent
	e.Do("GET", "/v2/agents/unhoused", nil, &unhoused)
	want := "the agent has no computer (spec.computer.kind: none) and spec.computer.network is not true; to let web_fetch fetch, set spec.computer.network: true"
	if unhoused.Spec.Computer == nil {
		t.Fatal("the agent created without a computer has no spec.computer")
	} else if k := unhoused.Spec.Computer.Kind; k != "none" {
		want = "the agent's computer (spec.computer.kind: " + string(k) + ") has no network: spec.computer.network is not true; to let web_fetch fetch, set spec.computer.network: true"
	}
	if got := e.AnswerOf("wf-unhoused"); !strings.Contains(got, want) || strings.Contains(got, "network: false") || !strings.Contains(got, "(code FetchNetworkOff): "+s.URL+"/docs/unhoused") {
		t.Errorf("no computer: %q, want %q", got, want)
	}
	if s.Count("/docs/offline") != 0 || s.Count("/docs/unhoused") != 0 {
		t.Error("the agent without network fetched")
	}
	if !HasEvent(e.Events("wf-offline"), "tool.refused", "web_fetch refused (FetchNetworkOff): "+s.URL+"/docs/offline") {
		t.Error("no tool.refused event with its code for the agent without network")
	}
	// Each refusal (and the cut) is on the timeline with its code and the address refused.
	for run, want := range map[string]struct {
		typ           api.EventType
		code, address string
	}{
		"wf-big":       {"tool.cut", "FetchCut", s.URL + "/big"},
		"wf-loop":      {"tool.refused", "FetchTooManyRedirects", s.URL + "/loop/6"},
		"wf-elsewhere": {"tool.refused", "FetchBlocked", other.HostPort()},
		"wf-file":      {"tool.refused", "FetchBadURL", "file:///etc/passwd"},
		"wf-offline":   {"tool.refused", "FetchNetworkOff", s.URL + "/docs/offline"},
	} {
		found := false
		for _, ev := range e.Events(run) {
			var d struct{ Code, Address string }
			_ = json.Unmarshal(ev.Data, &d)
			if ev.Type == want.typ && d.Code == want.code && d.Address == want.address && strings.Contains(ev.Message, want.address) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no %s event with code %s naming %s: %v", run, want.typ, want.code, want.address, e.Events(run))
		}
	}
}

// TestWebFetchApprovalsByURL: a rule allowing web_fetch(URL/docs/**) lets those pages through,
// the default deny refuses another URL on the same site unfetched, and a redirect from an
// allowed page to a URL the rules do not allow is not followed.
func TestWebFetchApprovalsByURL(t *testing.T) {
	t.Parallel()
	s := NewSite(t, pages("127.0.0.1:1"))
	cases := map[string]string{
		"Fetch docs":     fmt.Sprintf(`{url: %q}`, s.URL+"/docs/guide"),
		"Fetch the page": fmt.Sprintf(`{url: %q}`, s.URL+"/page"),
		"Fetch a jump":   fmt.Sprintf(`{url: %q}`, s.URL+"/docs/jump"),
	}
	e := NewEnv(t, fetchScript(cases))
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--fetch-allow", s.HostPort()})
	e.MustAgent("docs", fmt.Sprintf(`{"metadata":{"name":"docs"},"spec":{"tools":["web_fetch"],"computer":{"kind":"none","network":true},
		"approvals":{"default":"deny","rules":[{"match":"web_fetch(%s/docs/**)","action":"allow"}]}}}`, s.URL))
	e.StartRun("docs", "ap-docs", "Fetch docs")
	e.StartRun("docs", "ap-page", "Fetch the page")
	e.StartRun("docs", "ap-jump", "Fetch a jump")
	if got := e.AnswerOf("ap-docs"); !strings.Contains(got, "docs page /docs/guide") {
		t.Errorf("allowed URL: %q", got)
	}
	if got := e.AnswerOf("ap-page"); !strings.Contains(got, "did not run") {
		t.Errorf("denied URL: %q", got)
	}
	if got := e.AnswerOf("ap-jump"); !strings.Contains(got, "redirected to "+s.URL+"/page, which is not fetched") ||
		!strings.Contains(got, "web_fetch refused "+s.URL+"/page (code FetchRedirectNotAllowed)") {
		t.Errorf("redirect out of the allowed URLs: %q", got)
	}
	if n := s.Count("/page"); n != 0 {
		t.Errorf("/page, which the rules deny, was fetched %d times", n)
	}
	if n := s.Count("/docs/jump"); n != 1 {
		t.Errorf("/docs/jump fetched %d times, want 1", n)
	}
}

// TestWebFetchCrashReplay: the server is killed while the model answers after a fetch; the
// restarted server replays the fetch's result from the journal and does not fetch again.
func TestWebFetchCrashReplay(t *testing.T) {
	t.Parallel()
	s := NewSite(t, pages("127.0.0.1:1"))
	script := fmt.Sprintf(`
entries:
  - name: crashfetch
    match: "Fetch then think"
    turns:
      - tool_calls:
          - name: web_fetch
            input: {url: %q}
      - text: "after the crash: {{last_tool_result}}"
        latency: 60s
`, s.URL+"/count")
	e := NewEnv(t, script)
	var once sync.Once
	e.Model.OnRequest(func(c fake.Call) {
		if c.Entry == "crashfetch" && c.Turn == 1 {
			once.Do(func() { go e.Proc.Process.Signal(syscall.SIGKILL) })
		}
	})
	args := []string{"serve", "--listen", "127.0.0.1:0", "--fetch-allow", s.HostPort()}
	e.StartWith(args)
	e.MustAgent("crashfetch", `{"metadata":{"name":"crashfetch"},"spec":{"tools":["web_fetch"],"computer":{"kind":"none","network":true},"approvals":"never-ask"}}`)
	e.StartRun("crashfetch", "wf-crash", "Fetch then think")
	<-e.Exited
	e.Proc = nil
	sc, err := fake.ParseScript([]byte(strings.Replace(script, "latency: 60s", "latency: 0s", 1)))
	if err != nil {
		t.Fatal(err)
	}
	e.Model.SetScript(sc)
	e.StartWith(args)
	if got := e.AnswerOf("wf-crash"); !strings.Contains(got, `after the crash: URL: `+s.URL+`/count`) || !strings.Contains(got, `{"fetched": true}`) {
		t.Errorf("answer after the restart: %q", got)
	}
	if n := s.Count("/count"); n != 1 {
		t.Errorf("the page was fetched %d times, want once (the restart replays the recorded result)", n)
	}
	for _, st := range e.Steps("wf-crash") {
		if st.Key == "t0/tool/0" && st.Attempt != 1 {
			t.Errorf("the fetch step ran %d attempts, want 1", st.Attempt)
		}
	}
}

// TestWebFetchProxy: the server's HTTP_PROXY carries web_fetch's requests (the proxy, on
// loopback, must be allowed: the address dialled is the proxy's), and a host NO_PROXY names is
// fetched directly, not through it.
func TestWebFetchProxy(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	proxy := NewSite(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.String())
		mu.Unlock()
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "via the proxy: "+r.URL.String())
	}))
	cases := map[string]string{
		"Fetch through": `{url: "http://docs.example.invalid/guide"}`,
		"Fetch direct":  `{url: "http://direct.example.invalid/guide"}`,
	}
	e := NewEnv(t, fetchScript(cases))
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--fetch-allow", proxy.HostPort()},
		"HTTP_PROXY="+proxy.URL, "http_proxy="+proxy.URL, "NO_PROXY=direct.example.invalid", "no_proxy=direct.example.invalid")
	e.MustAgent("proxied", `{"metadata":{"name":"proxied"},"spec":{"tools":["web_fetch"],"computer":{"kind":"none","network":true},"approvals":"never-ask"}}`)
	e.StartRun("proxied", "px-through", "Fetch through")
	e.StartRun("proxied", "px-direct", "Fetch direct")
	if got := e.AnswerOf("px-through"); !strings.Contains(got, "via the proxy: http://docs.example.invalid/guide") {
		t.Errorf("through the proxy: %q", got)
	}
	if got := e.AnswerOf("px-direct"); strings.Contains(got, "via the proxy") || !strings.Contains(got, "nothing was read") {
		t.Errorf("a NO_PROXY host: %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 {
		t.Errorf("the proxy saw %v, want the one proxied request", seen)
	}
}
