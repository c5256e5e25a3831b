package computertest

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/computer"
)

var browserChecks = []Check{
	{"OpenTextAndLinks", checkOpen},
	{"ClickLink", checkClick},
	{"TypeAndSubmit", checkType},
	{"Screenshot", checkScreenshot},
	{"Download", checkDownload},
	{"AgentMistakes", checkBrowserMistakes},
	{"NetworkOff", checkBrowserNetworkOff},
	{"BrowserCleanup", checkBrowserCleanup},
}

const homePage = `<!doctype html><html><head><title>Conformance home</title></head><body>
<h1>Hello from the test page</h1>
<p><a id="second" href="/second">Second page</a></p>
<p><a href="/report.txt">Download the report</a></p>
<p><a href="/slow">Slow page</a></p>
<p><button id="press" onclick="document.getElementById('out').textContent = 'pressed ' + (++window.presses)">Press me</button> <span id="out"></span></p>
<script>window.presses = 0</script>
<form action="/search" method="get"><input id="q" name="q"><button type="submit">Go</button></form>
</body></html>`

// site serves the suite's small web site on the host's loopback, closed at
// cleanup.
func site(e *Env) string {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, homePage)
	})
	mux.HandleFunc("/second", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>Second</title><p>This is the second page</p><a href="/">Home</a>`)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		// Slower than a click's first look at the page.
		time.Sleep(600 * time.Millisecond)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>Slow</title><p>This page took its time</p>`)
	})
	mux.HandleFunc("/search", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>Results</title><p>You searched for %s</p>`, htmlEscape(r.URL.Query().Get("q")))
	})
	mux.HandleFunc("/report.txt", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="report.txt"`)
		fmt.Fprint(w, "the downloaded report\n")
	})
	srv := httptest.NewServer(mux)
	e.Cleanup(srv.Close)
	return srv.URL
}

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// browserFor makes a browser allowed on the network (the suite's site is on
// the host's loopback).
func browserFor(e *Env, run string) (computer.Browser, string, error) {
	return browserNet(e, run, true)
}

func browserNet(e *Env, run string, network bool) (computer.Browser, string, error) {
	c, dir, err := e.New(run, func(s *computer.Spec) { s.Network = network })
	if err != nil {
		return nil, "", err
	}
	b, ok := c.(computer.Browser)
	if !ok {
		return nil, "", fmt.Errorf("provider %s made a %T for kind browser, which is not a computer.Browser", e.Provider.Name(), c)
	}
	return b, dir, nil
}

func checkOpen(e *Env) error {
	url := site(e)
	b, _, err := browserFor(e, "open")
	if err != nil {
		return err
	}
	p, err := b.Open(e.Ctx, url+"/")
	if err != nil {
		return err
	}
	if p.Title != "Conformance home" || !strings.Contains(p.Text, "Hello from the test page") {
		return fmt.Errorf("page title %q text %q", p.Title, p.Text)
	}
	found := false
	for _, l := range p.Links {
		if l.Text == "Second page" && l.URL == url+"/second" {
			found = true
		}
	}
	if !found {
		return fmt.Errorf("links %+v lack {Second page %s/second}", p.Links, url)
	}
	cur, err := b.Current(e.Ctx)
	if err != nil {
		return err
	}
	if cur.URL != url+"/" || cur.Title != p.Title {
		return fmt.Errorf("current page %q %q, want the opened one", cur.URL, cur.Title)
	}
	return nil
}

func checkClick(e *Env) error {
	url := site(e)
	b, _, err := browserFor(e, "click")
	if err != nil {
		return err
	}
	if _, err := b.Open(e.Ctx, url+"/"); err != nil {
		return err
	}
	p, err := b.Click(e.Ctx, computer.Target{Text: "Second page"})
	if err != nil {
		return err
	}
	if p.URL != url+"/second" || !strings.Contains(p.Text, "This is the second page") {
		return fmt.Errorf("after clicking the link by text: %q %q", p.URL, p.Text)
	}
	if _, err := b.Click(e.Ctx, computer.Target{Text: "home"}); err != nil {
		return err
	}
	p, err = b.Click(e.Ctx, computer.Target{Selector: "#second"})
	if err != nil {
		return err
	}
	if p.URL != url+"/second" {
		return fmt.Errorf("after clicking #second: %q", p.URL)
	}
	// A click that changes the page in place, and one whose page is slow.
	if _, err := b.Click(e.Ctx, computer.Target{Text: "home"}); err != nil {
		return err
	}
	p, err = b.Click(e.Ctx, computer.Target{Text: "Press me"})
	if err != nil {
		return err
	}
	if !strings.Contains(p.Text, "pressed 1") {
		return fmt.Errorf("after pressing a button: %q", p.Text)
	}
	p, err = b.Click(e.Ctx, computer.Target{Text: "Slow page"})
	if err != nil {
		return err
	}
	if p.URL != url+"/slow" || !strings.Contains(p.Text, "This page took its time") {
		return fmt.Errorf("after clicking a link to a slow page: %q %q", p.URL, p.Text)
	}
	return nil
}

func checkType(e *Env) error {
	url := site(e)
	b, _, err := browserFor(e, "type")
	if err != nil {
		return err
	}
	if _, err := b.Open(e.Ctx, url+"/"); err != nil {
		return err
	}
	p, err := b.Type(e.Ctx, "#q", "agents & browsers", true)
	if err != nil {
		return err
	}
	if !strings.Contains(p.Text, "You searched for agents & browsers") {
		return fmt.Errorf("after typing and submitting: %q %q", p.URL, p.Text)
	}
	return nil
}

var pngMagic = []byte("\x89PNG\r\n\x1a\n")

func checkScreenshot(e *Env) error {
	url := site(e)
	b, dir, err := browserFor(e, "shot")
	if err != nil {
		return err
	}
	if _, err := b.Open(e.Ctx, url+"/"); err != nil {
		return err
	}
	for _, want := range []string{"", "shots/home.png"} {
		rel, err := b.Screenshot(e.Ctx, want)
		if err != nil {
			return err
		}
		if want != "" && rel != want {
			return fmt.Errorf("screenshot saved at %q, asked for %q", rel, want)
		}
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return fmt.Errorf("screenshot %q not in the run folder: %v", rel, err)
		}
		if !bytes.HasPrefix(data, pngMagic) || len(data) < 100 {
			return fmt.Errorf("screenshot %q is not a PNG (%d bytes)", rel, len(data))
		}
	}
	if _, err := b.Screenshot(e.Ctx, "../outside.png"); !computer.IsAgentError(err) {
		return fmt.Errorf("a screenshot outside the run folder: %v, want an agent error", err)
	}
	return nil
}

func checkDownload(e *Env) error {
	url := site(e)
	b, dir, err := browserFor(e, "download")
	if err != nil {
		return err
	}
	if _, err := b.Open(e.Ctx, url+"/"); err != nil {
		return err
	}
	p, err := b.Click(e.Ctx, computer.Target{Text: "Download the report"})
	if err != nil {
		return err
	}
	if len(p.Downloads) != 1 {
		return fmt.Errorf("downloads after clicking a download link: %v", p.Downloads)
	}
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p.Downloads[0])))
	if err != nil || string(data) != "the downloaded report\n" {
		return fmt.Errorf("download %s in the run folder: %q, %v", p.Downloads[0], data, err)
	}
	return nil
}

func checkBrowserMistakes(e *Env) error {
	url := site(e)
	b, _, err := browserFor(e, "mistakes")
	if err != nil {
		return err
	}
	if _, err := b.Open(e.Ctx, "file:///etc/passwd"); !computer.IsAgentError(err) {
		return fmt.Errorf("opening a file:// URL: %v, want an agent error", err)
	}
	if _, err := b.Open(e.Ctx, url+"/"); err != nil {
		return err
	}
	if _, err := b.Click(e.Ctx, computer.Target{Selector: "#missing"}); !computer.IsAgentError(err) {
		return fmt.Errorf("clicking a missing element: %v, want an agent error", err)
	}
	if _, err := b.Click(e.Ctx, computer.Target{Text: "no such link"}); !computer.IsAgentError(err) {
		return fmt.Errorf("clicking a missing link text: %v, want an agent error", err)
	}
	if _, err := b.Type(e.Ctx, "#missing", "x", false); !computer.IsAgentError(err) {
		return fmt.Errorf("typing into a missing field: %v, want an agent error", err)
	}
	// Port 1 on loopback: nothing listens, the page does not load.
	if _, err := b.Open(e.Ctx, "http://127.0.0.1:1/"); !computer.IsAgentError(err) {
		return fmt.Errorf("opening a page that does not load: %v, want an agent error", err)
	}
	// The browser still works after the mistakes.
	if _, err := b.Open(e.Ctx, url+"/second"); err != nil {
		return fmt.Errorf("after the mistakes: %w", err)
	}
	return nil
}

// hostPIDs is implemented by local providers whose processes the suite can
// see on the host.
type hostPIDs interface{ HostPIDs() []int }

func checkBrowserCleanup(e *Env) error {
	url := site(e)
	b, _, err := browserFor(e, "cleanup")
	if err != nil {
		return err
	}
	if _, err := b.Open(e.Ctx, url+"/"); err != nil {
		return err
	}
	hp, ok := b.(hostPIDs)
	if ok && len(hp.HostPIDs()) == 0 {
		return fmt.Errorf("no browser process visible on the host before Close; the check would prove nothing")
	}
	if err := b.Close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	if ok {
		deadline := time.Now().Add(5 * time.Second)
		for len(hp.HostPIDs()) > 0 {
			if time.Now().After(deadline) {
				return fmt.Errorf("browser processes %v survive Close", hp.HostPIDs())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if _, err := b.Current(e.Ctx); err == nil || computer.IsAgentError(err) {
		return fmt.Errorf("a closed browser answered: %v, want computer.ErrClosed", err)
	}
	if err := b.Close(); err != nil {
		return fmt.Errorf("second close: %w", err)
	}
	return nil
}

func checkBrowserNetworkOff(e *Env) error {
	url := site(e)
	b, _, err := browserNet(e, "nonet", false)
	if err != nil {
		return err
	}
	p, err := b.Open(e.Ctx, url+"/")
	if err == nil {
		return fmt.Errorf("a browser without network opened the host's %s: %q", url, p.Title)
	}
	if !computer.IsAgentError(err) {
		return fmt.Errorf("a page that cannot load: %v, want an agent error", err)
	}
	return nil
}
