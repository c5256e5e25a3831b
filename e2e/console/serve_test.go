package console

import (
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"github.com/chromedp/chromedp"
)

// serve --no-accounts on any address but loopback refuses to start, saying why; on loopback the
// console needs no sign-in: a browser gets straight to Mission Control and approves a run there
// (recorded as person:local), a request naming another host is refused (DNS rebinding), and a
// form posted without the page's session is refused.
func TestServeNoAccounts(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, pagesScript)
	for _, args := range [][]string{
		{"serve", "--no-accounts", "--host", "0.0.0.0"},
		{"serve", "--no-accounts", "--listen", "192.0.2.1:0"},
		{"serve", "--no-accounts", "--public-url", "https://agents.example.com"},
	} {
		r := e.CLI(e.Dir, args...)
		if r.Code == 0 || !strings.Contains(r.Stderr, "--no-accounts") || !strings.Contains(r.Stderr, "drop") {
			t.Errorf("agentrun %s: exit %d, want a refusal naming --no-accounts\nstderr: %s", strings.Join(args, " "), r.Code, r.Stderr)
		}
		if _, err := os.Stat(filepath.Join(e.Dir, "server.json")); err == nil {
			t.Errorf("agentrun %s wrote server.json: it started", strings.Join(args, " "))
		}
	}

	e.StartWith([]string{"serve", "--no-accounts", "--listen", "127.0.0.1:0"})
	if strings.Contains(e.Stderr.String(), "setup code") || !strings.Contains(e.Stderr.String(), "--no-accounts") {
		t.Errorf("serve --no-accounts printed a setup code, or not that it has no accounts:\n%s", e.Stderr.String())
	}
	if st := e.Do("PUT", "/v2/agents/careful", `{"metadata":{"name":"careful"},"spec":{"tools":["dev_count"],"approvals":{"default":"allow","rules":[{"match":"dev_count","action":"ask"}]}}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"local-1"},"spec":{"agent":"careful","input":"Count carefully: ten"}}`, nil)
	e.WaitPhase("local-1", 20*time.Second, api.PhaseWaiting)

	// Plain HTTP: the first page sets the session and comes back; no login page on the way.
	jar, _ := cookiejar.New(nil)
	var hops []string
	client := &http.Client{Jar: jar, Timeout: 10 * time.Second, CheckRedirect: func(r *http.Request, via []*http.Request) error {
		hops = append(hops, r.URL.Path)
		return nil
	}}
	resp, err := client.Get(e.URL + "/settings")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || Contains(hops, "/login") {
		t.Errorf("GET /settings without accounts: HTTP %d via %v, want the page with no sign-in", resp.StatusCode, hops)
	}
	// Another host name for 127.0.0.1 (a rebinding attacker's) is refused, session or not.
	req, _ := http.NewRequest("GET", e.URL+"/", nil)
	req.Host = "attacker.example:80"
	if resp, err := client.Do(req); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("GET / with Host attacker.example: HTTP %d, want 403", resp.StatusCode)
		}
	}
	// A form from elsewhere (no session cookie, no token) is refused.
	if resp, err := HTTPNoRedirectClient().PostForm(e.URL+"/runs/local-1/approvals/3", map[string][]string{"decision": {"approve"}}); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("an approval posted without the session: HTTP %d, want 403", resp.StatusCode)
		}
	}

	// A browser: Mission Control at once, then the run's approval.
	ctx := NewBrowser(t, 60*time.Second)
	if err := chromedp.Do(ctx, chromedp.Navigate(e.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`h1#mission`)),
		chromedp.Click(chromedp.CSS(`a[href="/runs/local-1"]`)), chromedp.WaitVisible(chromedp.CSS(`button[value=approve]`)),
		chromedp.Click(chromedp.CSS(`button[value=approve]`))); err != nil {
		body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
		t.Fatalf("browser without accounts: %v\n%s", err, body)
	}
	if r := e.WaitPhase("local-1", 20*time.Second, api.PhaseSucceeded, api.PhaseFailed); r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("after approving without accounts: %s %s", r.Status.Phase, r.Status.Message)
	}
	if body, ok := waitText(ctx, "approved by person:local", 15*time.Second); !ok {
		t.Errorf("the run page does not say who approved:\n%s", body)
	}
}

// serve opens the console in the person's browser on first start ($BROWSER, else xdg-open, each
// a fake here that writes down what it was asked to open) when started from a terminal on a
// machine with a display; never with --no-open, without a display, or when its output is not a
// terminal (a service).
func TestServeOpensBrowser(t *testing.T) {
	t.Parallel()
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script (util-linux) is not installed: serve's output cannot be given a terminal to test the opener")
	}
	bin := t.TempDir()
	record := filepath.Join(t.TempDir(), "opened")
	fake := "#!/bin/sh\necho \"$(basename \"$0\") $*\" >> " + record + "\n"
	for _, name := range []string{"fake-browser", "xdg-open"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(fake), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	path := bin + string(os.PathListSeparator) + os.Getenv("PATH")

	cases := []struct {
		name     string
		args     []string
		env      []string
		terminal bool
		want     string // what the fake was asked to open; "" for nothing
	}{
		{"BROWSER on a display", []string{"--listen", "127.0.0.1:0"}, []string{"DISPLAY=:99", "BROWSER=fake-browser"}, true, "fake-browser http://127.0.0.1:"},
		{"xdg-open on Wayland", []string{"--listen", "127.0.0.1:0"}, []string{"WAYLAND_DISPLAY=wayland-0"}, true, "xdg-open http://127.0.0.1:"},
		{"--no-open", []string{"--listen", "127.0.0.1:0", "--no-open"}, []string{"DISPLAY=:99", "BROWSER=fake-browser"}, true, ""},
		{"no display", []string{"--listen", "127.0.0.1:0"}, []string{"BROWSER=fake-browser"}, true, ""},
		{"not a terminal", []string{"--listen", "127.0.0.1:0"}, []string{"DISPLAY=:99", "BROWSER=fake-browser"}, false, ""},
	}
	for _, c := range cases {
		os.Remove(record)
		e := NewEnv(t, pagesScript)
		// The last of a name wins: the test's PATH, no display or browser unless the case sets one.
		env := append(e.BaseEnv(), "PATH="+path, "DISPLAY=", "WAYLAND_DISPLAY=", "BROWSER=")
		env = append(env, c.env...)
		argv := append([]string{BinPath, "serve"}, c.args...)
		var cmd *exec.Cmd
		if c.terminal {
			cmd = exec.Command(scriptBin, "-qec", shellJoin(argv), "/dev/null")
		} else {
			cmd = exec.Command(argv[0], argv[1:]...)
		}
		cmd.Env = env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		out := &SyncBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatalf("%s: start: %v", c.name, err)
		}
		url, pid := waitServer(t, e.Dir, 20*time.Second)
		stop := func() {
			// script puts serve in a session of its own: signal both.
			if pid > 0 {
				syscall.Kill(pid, syscall.SIGTERM)
			}
			syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			cmd.Wait()
		}
		if url == "" {
			stop()
			t.Fatalf("%s: the server did not come up:\n%s", c.name, out.String())
		}
		var got string
		deadline := time.Now().Add(5 * time.Second)
		if c.want == "" {
			deadline = time.Now().Add(1500 * time.Millisecond) // the opener runs before serve answers
		}
		for time.Now().Before(deadline) {
			if b, err := os.ReadFile(record); err == nil && strings.Contains(string(b), "\n") {
				got = strings.TrimSpace(string(b))
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		stop()
		switch {
		case c.want == "" && got != "":
			t.Errorf("%s: serve opened a browser: %q\n%s", c.name, got, out.String())
		case c.want != "" && (!strings.HasPrefix(got, c.want) || !strings.HasSuffix(got, "/") || strings.Count(got, "\n") > 0):
			t.Errorf("%s: the browser was asked to open %q, want %q…/ once\n%s", c.name, got, c.want, out.String())
		case c.want != "" && !strings.HasPrefix(got, strings.SplitN(c.want, " ", 2)[0]+" "+url):
			t.Errorf("%s: opened %q, not the console at %s", c.name, got, url)
		}
	}
}

// waitServer waits for the server started on data folder dir to answer and returns its URL and
// process id ("" if it did not).
func waitServer(t *testing.T, dir string, d time.Duration) (string, int) {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var info struct {
			URL string `json:"url"`
			PID int    `json:"pid"`
		}
		b, err := os.ReadFile(filepath.Join(dir, "server.json"))
		if err != nil || json.Unmarshal(b, &info) != nil {
			continue
		}
		if resp, err := http.Get(info.URL + "/healthz"); err == nil {
			resp.Body.Close()
			return info.URL, info.PID
		}
	}
	return "", 0
}

// shellJoin quotes argv for sh -c.
func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
