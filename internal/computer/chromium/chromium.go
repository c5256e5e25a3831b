// Package chromium is the "chromium" browser provider: a local headless
// Chromium (Debian's chromium package) driven over the DevTools protocol with
// chromedp. Each computer is its own Chromium process with a fresh profile
// (--user-data-dir in a temporary folder, removed at Close), so runs share no
// cookies, cache or history. Downloads go to downloads/ in the run folder and
// screenshots are PNG files in the run folder. A Browser is also a
// computer.Screen: the console shows its viewport as JPEG frames and, during a
// takeover, sends a person's clicks, typing and keys to it (screen.go).
//
// Isolation is that of a separate browser profile, not of a sandbox: the
// browser runs as the server's user, on the host's network when
// computer.network allows it (the host's loopback services included). It is
// kept to http(s) URLs (no file://, which would read the host's files).
// Without computer.network every request goes to a proxy that does not
// exist, so the browser reaches nothing at all.
package chromium

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"agentrun.dev/agentrun/internal/computer"
)

// Provider is the chromium provider. The zero value is ready to use.
type Provider struct {
	// Path is the Chromium binary; default: chromium (or chromium-browser)
	// on PATH.
	Path string
}

// New returns the chromium provider.
func New() *Provider { return &Provider{} }

func (p *Provider) Name() string           { return "chromium" }
func (p *Provider) Kinds() []computer.Kind { return []computer.Kind{computer.KindBrowser} }

func (p *Provider) binary() (string, error) {
	if p.Path != "" {
		return exec.LookPath(p.Path)
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path, nil
		}
	}
	return "", errors.New("chromium not found")
}

func (p *Provider) Available(ctx context.Context) computer.Availability {
	if _, err := p.binary(); err != nil {
		return computer.Availability{Reason: "chromium not installed: apt-get install chromium"}
	}
	return computer.Availability{Available: true}
}

// Timeouts of browser actions. An action that runs past them is the page's
// doing (it does not load, the element never appears), so it is reported to
// the agent, not as a failure of the computer.
const (
	loadTimeout     = 30 * time.Second
	settleWait      = time.Second
	elementTimeout  = 5 * time.Second
	downloadTimeout = 60 * time.Second
	maxText         = 100 << 10
	maxLinks        = 200
)

// Create starts Chromium for spec.Run.
func (p *Provider) Create(ctx context.Context, spec computer.Spec) (computer.Computer, error) {
	if spec.Kind != "" && spec.Kind != computer.KindBrowser {
		return nil, fmt.Errorf("chromium provider makes browser computers, not %s", spec.Kind)
	}
	bin, err := p.binary()
	if err != nil {
		return nil, errors.New("chromium not installed: apt-get install chromium")
	}
	folder, err := filepath.Abs(spec.Folder)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(folder); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("run folder %s is not a folder", folder)
	}
	removeStaleProfiles()
	profile, err := os.MkdirTemp("", profilePrefix)
	if err != nil {
		return nil, err
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.UserDataDir(profile),
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900),
		// One frame pixel per CSS pixel, so a person's click on a frame lands where it shows.
		chromedp.Flag("force-device-scale-factor", "1"),
		// A closed network makes Chromium's own background traffic noisy.
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-crash-reporter", true),
	}
	opts = append(chromedp.DefaultExecAllocatorOptions[:], opts...)
	if os.Geteuid() == 0 {
		// Chromium's own sandbox refuses to run as root.
		opts = append(opts, chromedp.NoSandbox)
	}
	if !spec.Network {
		// No network: every request goes to a proxy that is not there
		// (nothing listens on the discard port), loopback included
		// (<-loopback> removes Chromium's implicit bypass, which would
		// leave the host's own services reachable), and WebRTC may not
		// send UDP around the proxy. Host names go to the proxy too, so
		// not even DNS leaves.
		opts = append(opts, chromedp.ProxyServer("http://127.0.0.1:9"),
			chromedp.Flag("proxy-bypass-list", "<-loopback>"),
			chromedp.Flag("force-webrtc-ip-handling-policy", "disable_non_proxied_udp"))
	}
	b := &Browser{spec: spec, folder: folder, profile: profile, downloads: map[string]*download{}}
	b.allocCtx, b.allocCancel = chromedp.NewExecAllocator(context.Background(), opts...)
	b.ctx, b.cancel = chromedp.NewContext(b.allocCtx)

	// The first action starts the browser and ties it to b.ctx, so it runs
	// on b.ctx; ctx bounds it from outside.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(b.ctx) }()
	select {
	case err = <-started:
	case <-ctx.Done():
		b.Close()
		<-started
		return nil, ctx.Err()
	}
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("start chromium: %w", err)
	}
	dl := filepath.Join(folder, "downloads")
	if err := os.MkdirAll(dl, 0o755); err != nil {
		b.Close()
		return nil, err
	}
	if err := chromedp.ListenBrowser(b.ctx, b.onEvent); err != nil {
		b.Close()
		return nil, err
	}
	events := true
	if _, err := chromedp.CallBrowser(b.ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dl, EventsEnabled: &events,
	}); err != nil {
		b.Close()
		return nil, fmt.Errorf("set download folder: %w", err)
	}
	b.info = []string{
		"provider: chromium (" + bin + ", headless, DevTools protocol)",
		"profile: fresh, removed at close",
		"downloads: " + dl,
		fmt.Sprintf("network: %v", map[bool]string{true: "the host's", false: "none (a proxy that is not there)"}[spec.Network]),
	}
	return b, nil
}

// download is one download the browser reported.
type download struct {
	name  string
	state string // inProgress, completed, canceled
	path  string
	seq   int
}

// Browser is a running Chromium. It implements computer.Browser. Its actions
// are serialized: one page, one agent.
type Browser struct {
	spec    computer.Spec
	folder  string
	profile string
	info    []string

	allocCtx    context.Context
	allocCancel context.CancelFunc
	ctx         context.Context // the browser's tab; lives until Close
	cancel      context.CancelFunc

	act sync.Mutex // one action at a time
	// tab is the page actions run on once heal replaced the first one (nil: ctx's); tabClose
	// closes it. healMu serializes heals (the console's screen acts beside the agent).
	tab      context.Context
	tabClose context.CancelFunc
	healMu   sync.Mutex

	mu        sync.Mutex
	downloads map[string]*download
	dlSeq     int
	docSeq    int
	shots     int
	closed    bool

	closeOnce sync.Once
	closeErr  error
}

var _ computer.Browser = (*Browser)(nil)

func (b *Browser) Kind() computer.Kind { return computer.KindBrowser }
func (b *Browser) Info() []string      { return append([]string(nil), b.info...) }

// onEvent records downloads. It runs in chromedp's event loop and must not
// block or call into chromedp.
func (b *Browser) onEvent(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch ev := ev.(type) {
	case *browser.EventDownloadWillBegin:
		b.dlSeq++
		b.downloads[ev.GUID] = &download{name: ev.SuggestedFilename, state: "inProgress", seq: b.dlSeq}
	case *browser.EventDownloadProgress:
		d := b.downloads[ev.GUID]
		if d == nil {
			b.dlSeq++
			d = &download{seq: b.dlSeq}
			b.downloads[ev.GUID] = d
		}
		d.state = string(ev.State)
		if ev.FilePath != "" {
			d.path = ev.FilePath
		}
	}
}

// alive returns the context for one action, bounded by the caller's ctx and
// by the browser's life, or ErrClosed.
func (b *Browser) alive(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc, error) {
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed || b.ctx.Err() != nil {
		return nil, nil, computer.NotStarted("the browser was gone before the action")
	}
	actx, cancel := context.WithTimeout(b.tabCtx(), timeout)
	stop := context.AfterFunc(ctx, cancel)
	return actx, func() { stop(); cancel() }, nil
}

// classify turns a chromedp error into an agent error when it is about the
// page (it did not load, timed out, a script threw), or an infrastructure
// error when the browser is gone or the caller's ctx ended.
func (b *Browser) classify(ctx context.Context, what string, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if b.ctx.Err() != nil {
		return fmt.Errorf("%w: chromium is gone: %v", computer.ErrClosed, err)
	}
	// The browser is up, so whatever went wrong is about the page (it did not load, timed out,
	// a script threw, the page went away): the agent is told and the run goes on. A page that
	// no longer answers is replaced for the next action.
	msg := err.Error()
	if errors.Is(err, context.DeadlineExceeded) {
		msg = "timed out"
	}
	if b.heal() {
		msg += "; the browser's page stopped answering, so it opened a new, empty page: open a URL to go on"
	}
	return computer.Agentf("%s: %s", what, msg)
}

func (b *Browser) Open(ctx context.Context, url string) (computer.Page, error) {
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
		return computer.Page{}, computer.Agentf("only http:// and https:// URLs can be opened, not %q", url)
	}
	b.act.Lock()
	defer b.act.Unlock()
	actx, cancel, err := b.alive(ctx, loadTimeout)
	if err != nil {
		return computer.Page{}, err
	}
	defer cancel()
	if err := chromedp.Do(actx, chromedp.Navigate(url)); err != nil {
		return computer.Page{}, b.classify(ctx, "open "+url, err)
	}
	return b.page(ctx, 0)
}

func (b *Browser) Current(ctx context.Context) (computer.Page, error) {
	b.act.Lock()
	defer b.act.Unlock()
	return b.page(ctx, 0)
}

// pageJS reads the page: URL, title, visible text and links.
const pageJS = `(() => {
  const links = [];
  for (const a of document.querySelectorAll('a[href]')) {
    if (links.length >= %d) break;
    links.push({Text: (a.innerText || a.textContent || '').trim().replace(/\s+/g, ' ').slice(0, 200), URL: a.href.slice(0, 2000)});
  }
  return {URL: location.href, Title: document.title,
    Text: document.body ? document.body.innerText : '', Links: links};
})()`

// page waits for the page to finish loading, then reads it, adding the
// downloads numbered after dlMark that finished.
func (b *Browser) page(ctx context.Context, dlMark int) (computer.Page, error) {
	actx, cancel, err := b.alive(ctx, loadTimeout)
	if err != nil {
		return computer.Page{}, err
	}
	defer cancel()
	var p computer.Page
	// A click may have started a navigation: read once the document in
	// place is complete, retrying while a new one replaces it.
	for {
		state, err := chromedp.Run(actx, chromedp.Evaluate[string](`document.readyState`))
		if err == nil && state == "complete" {
			p, err = chromedp.Run(actx, chromedp.Evaluate[computer.Page](fmt.Sprintf(pageJS, maxLinks)))
			if err == nil {
				break
			}
		}
		if actx.Err() != nil {
			return computer.Page{}, b.classify(ctx, "read the page", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(p.Text) > maxText {
		p.Text = strings.ToValidUTF8(p.Text[:maxText], "") + "\n[page text cut at 100 KiB]"
	}
	if dlMark >= 0 {
		p.Downloads, err = b.waitDownloads(ctx, dlMark)
		if err != nil {
			return p, err
		}
	}
	return p, nil
}

func (b *Browser) dlMark() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dlSeq
}

// waitDownloads waits for the downloads numbered after mark to finish and
// returns the completed ones as paths relative to the run folder.
func (b *Browser) waitDownloads(ctx context.Context, mark int) ([]string, error) {
	deadline := time.Now().Add(downloadTimeout)
	for {
		b.mu.Lock()
		var done []string
		pending := 0
		for _, d := range b.downloads {
			if d.seq <= mark {
				continue
			}
			switch d.state {
			case "completed":
				p := d.path
				if p == "" {
					p = filepath.Join(b.folder, "downloads", d.name)
				}
				if rel, err := filepath.Rel(b.folder, p); err == nil {
					done = append(done, filepath.ToSlash(rel))
				}
			case "canceled":
			default:
				pending++
			}
		}
		b.mu.Unlock()
		if pending == 0 {
			return done, nil
		}
		if time.Now().After(deadline) {
			return done, computer.Agentf("%d download(s) still in progress after %v", pending, downloadTimeout)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// clickJS finds the target and clicks it; it returns "" or why it could not.
const clickJS = `((sel, text) => {
  let el = null;
  if (sel) {
    try { el = document.querySelector(sel); } catch (e) { return 'invalid selector: ' + e.message; }
    if (!el) return 'no element matches ' + JSON.stringify(sel);
  } else {
    const norm = s => (s || '').trim().replace(/\s+/g, ' ').toLowerCase();
    const want = norm(text);
    const cands = [...document.querySelectorAll('a, button, input[type=submit], input[type=button], [role=button], [role=link], summary, label')];
    const label = c => norm(c.innerText || c.value || c.getAttribute('aria-label') || c.textContent);
    el = cands.find(c => label(c) === want) || cands.find(c => label(c).includes(want));
    if (!el) return 'no link or button with text ' + JSON.stringify(text);
  }
  el.scrollIntoView({block: 'center'});
  el.click();
  return '';
})(%s, %s)`

func (b *Browser) Click(ctx context.Context, t computer.Target) (computer.Page, error) {
	if (t.Selector == "") == (t.Text == "") {
		return computer.Page{}, computer.Agentf("give either a CSS selector or the text of a link or button to click, not both or neither")
	}
	b.act.Lock()
	defer b.act.Unlock()
	mark := b.dlMark()
	doc, err := b.markDocument(ctx)
	if err != nil {
		return computer.Page{}, err
	}
	if err := b.runJS(ctx, "click", fmt.Sprintf(clickJS, jsString(t.Selector), jsString(t.Text))); err != nil {
		return computer.Page{}, err
	}
	return b.settle(ctx, mark, doc)
}

// markDocument tags the document shown now, so settle can tell when an
// action replaced it.
func (b *Browser) markDocument(ctx context.Context) (string, error) {
	b.mu.Lock()
	b.docSeq++
	doc := strconv.Itoa(b.docSeq)
	b.mu.Unlock()
	return doc, b.runJS(ctx, "read the page", fmt.Sprintf(`(() => { window.__agentrunDoc = %q; return ''; })()`, doc))
}

// settle waits for an action's effects to start (a new document replacing
// the tagged one, or a download) for up to settleWait, then reads the page
// once they are over. An action with neither (an in-page script) costs the
// whole wait; a server slower than that to answer leaves the old page in
// the result, and browser_text reads the new one.
func (b *Browser) settle(ctx context.Context, dlMark int, doc string) (computer.Page, error) {
	deadline := time.Now().Add(settleWait)
	for time.Now().Before(deadline) {
		if b.dlMark() != dlMark {
			break
		}
		actx, cancel, err := b.alive(ctx, time.Second)
		if err != nil {
			return computer.Page{}, err
		}
		same, err := chromedp.Run(actx, chromedp.Evaluate[bool](fmt.Sprintf(`window.__agentrunDoc === %q`, doc)))
		cancel()
		if err != nil && ctx.Err() != nil {
			return computer.Page{}, ctx.Err()
		}
		if err != nil || !same {
			break // a navigation destroyed the context, or a new document is in place
		}
		select {
		case <-ctx.Done():
			return computer.Page{}, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return b.page(ctx, dlMark)
}

// runJS evaluates a script that returns "" on success or the agent's mistake.
func (b *Browser) runJS(ctx context.Context, what, script string) error {
	actx, cancel, err := b.alive(ctx, elementTimeout)
	if err != nil {
		return err
	}
	defer cancel()
	msg, err := chromedp.Run(actx, chromedp.Evaluate[string](script))
	if err != nil {
		return b.classify(ctx, what, err)
	}
	if msg != "" {
		return computer.Agentf("%s: %s", what, msg)
	}
	return nil
}

func jsString(s string) string {
	return strconv.Quote(s) // a Go quoted string is a valid JS string literal for our purposes
}

// focusJS finds a field, clears it and focuses it.
const focusJS = `((sel) => {
  let el;
  try { el = document.querySelector(sel); } catch (e) { return 'invalid selector: ' + e.message; }
  if (!el) return 'no element matches ' + JSON.stringify(sel);
  if (!('value' in el) && !el.isContentEditable) return JSON.stringify(sel) + ' is not a field one can type into';
  el.scrollIntoView({block: 'center'});
  el.focus();
  if ('value' in el) { el.value = ''; el.dispatchEvent(new Event('input', {bubbles: true})); }
  return '';
})(%s)`

// submitJS submits the form of the focused field.
const submitJS = `((sel) => {
  const el = document.querySelector(sel);
  if (!el) return 'the field went away before submit';
  if (!el.form) return JSON.stringify(sel) + ' is not in a form; click its submit button instead';
  if (el.form.requestSubmit) el.form.requestSubmit(); else el.form.submit();
  return '';
})(%s)`

func (b *Browser) Type(ctx context.Context, selector, text string, submit bool) (computer.Page, error) {
	if selector == "" {
		return computer.Page{}, computer.Agentf("give the CSS selector of the field to type into")
	}
	b.act.Lock()
	defer b.act.Unlock()
	mark := b.dlMark()
	if err := b.runJS(ctx, "type", fmt.Sprintf(focusJS, jsString(selector))); err != nil {
		return computer.Page{}, err
	}
	// Real key events, so pages that listen to keys see typing.
	actx, cancel, err := b.alive(ctx, elementTimeout+time.Duration(len(text))*10*time.Millisecond)
	if err != nil {
		return computer.Page{}, err
	}
	err = chromedp.Do(actx, chromedp.SendKeys(chromedp.CSS(selector), text))
	cancel()
	if err != nil {
		return computer.Page{}, b.classify(ctx, "type into "+selector, err)
	}
	if !submit {
		return b.page(ctx, mark)
	}
	doc, err := b.markDocument(ctx)
	if err != nil {
		return computer.Page{}, err
	}
	if err := b.runJS(ctx, "submit", fmt.Sprintf(submitJS, jsString(selector))); err != nil {
		return computer.Page{}, err
	}
	return b.settle(ctx, mark, doc)
}

// Screenshot saves the viewport as PNG inside the run folder.
func (b *Browser) Screenshot(ctx context.Context, path string) (string, error) {
	b.act.Lock()
	defer b.act.Unlock()
	if path == "" {
		b.mu.Lock()
		b.shots++
		path = fmt.Sprintf("screenshots/%d.png", b.shots)
		b.mu.Unlock()
	}
	path = strings.TrimPrefix(path, "/workspace/")
	if !strings.HasSuffix(strings.ToLower(path), ".png") {
		return "", computer.Agentf("screenshots are PNG files: the path must end in .png, not %q", path)
	}
	if !filepath.IsLocal(path) {
		return "", computer.Agentf("screenshot path %q must be relative and inside the run folder", path)
	}
	actx, cancel, err := b.alive(ctx, loadTimeout)
	if err != nil {
		return "", err
	}
	defer cancel()
	png, err := chromedp.Run(actx, chromedp.CaptureScreenshot())
	if err != nil {
		return "", b.classify(ctx, "screenshot", err)
	}
	// os.Root keeps the write inside the run folder even through links the
	// agent may have made there.
	root, err := os.OpenRoot(b.folder)
	if err != nil {
		return "", err
	}
	defer root.Close()
	if dir := filepath.Dir(path); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return "", computer.Agentf("screenshot folder %s: %v", dir, err)
		}
	}
	if err := root.WriteFile(path, png, 0o644); err != nil {
		return "", computer.Agentf("write screenshot %s: %v", path, err)
	}
	return filepath.ToSlash(path), nil
}

// Close ends Chromium and every process it started, then removes its profile.
func (b *Browser) Close() error {
	b.closeOnce.Do(func() {
		b.mu.Lock()
		b.closed = true
		b.mu.Unlock()
		b.cancel()
		b.allocCancel()
		if a := chromedp.FromContext(b.ctx); a != nil && a.Allocator != nil {
			a.Allocator.Wait()
		}
		var errs []error
		if left := killUsing(b.profile, 5*time.Second); len(left) > 0 {
			errs = append(errs, fmt.Errorf("chromium processes %v survived Close", left))
		}
		if err := os.RemoveAll(b.profile); err != nil {
			errs = append(errs, err)
		}
		b.closeErr = errors.Join(errs...)
	})
	return b.closeErr
}

// killUsing kills the processes started with the profile (Chromium passes
// --user-data-dir to every child) until none is left, and returns those that
// would not go.
func killUsing(profile string, wait time.Duration) []int {
	want := "--user-data-dir=" + profile
	deadline := time.Now().Add(wait)
	for {
		var found []int
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			if err != nil {
				continue
			}
			for _, arg := range strings.Split(string(cmdline), "\x00") {
				if arg == want {
					found = append(found, pid)
					syscall.Kill(pid, syscall.SIGKILL)
					break
				}
			}
		}
		if len(found) == 0 || time.Now().After(deadline) {
			return found
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// HostPIDs lists the host processes of this browser (for the conformance
// suite's cleanup check).
func (b *Browser) HostPIDs() []int {
	return listUsing(b.profile)
}

func listUsing(profile string) []int {
	want := "--user-data-dir=" + profile
	var found []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		for _, arg := range strings.Split(string(cmdline), "\x00") {
			if arg == want {
				found = append(found, pid)
				break
			}
		}
	}
	return found
}

const profilePrefix = "agentrun-chromium-"

// removeStaleProfiles removes the profiles of browsers whose server died
// without closing them (their processes died with it, the folders stay):
// those older than a minute that no process uses.
func removeStaleProfiles() {
	tmp := os.TempDir()
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), profilePrefix) {
			continue
		}
		dir := filepath.Join(tmp, e.Name())
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > time.Minute && len(listUsing(dir)) == 0 {
			os.RemoveAll(dir)
		}
	}
}
