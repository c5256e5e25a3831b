package chromium

import (
	"context"
	"time"

	"github.com/chromedp/chromedp"
)

// Timeouts of healing a page.
const (
	probeTimeout  = 3 * time.Second
	newTabTimeout = 10 * time.Second
)

// tabCtx is the page (DevTools target) actions run on: the first tab, or the one heal made.
func (b *Browser) tabCtx() context.Context {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tab != nil {
		return b.tab
	}
	return b.ctx
}

// heal checks, after an action failed, that the page still answers, and when it does not (a
// failed load can leave the target detached: "Not attached to an active page") opens a new tab
// for the next actions and closes the broken one. It reports whether it replaced the page. The
// first tab is never closed: closing it would end the browser.
func (b *Browser) heal() bool {
	b.healMu.Lock()
	defer b.healMu.Unlock()
	if b.ctx.Err() != nil {
		return false
	}
	pctx, cancel := context.WithTimeout(b.tabCtx(), probeTimeout)
	_, err := chromedp.Run(pctx, chromedp.Evaluate[int](`1`))
	cancel()
	if err == nil {
		return false
	}
	tab, closeTab := chromedp.NewContext(b.ctx)
	done := make(chan error, 1)
	go func() { done <- chromedp.Do(tab) }() // makes the target
	select {
	case err = <-done:
	case <-time.After(newTabTimeout):
		closeTab()
		<-done
		return false
	}
	if err != nil {
		closeTab()
		return false
	}
	b.mu.Lock()
	old := b.tabClose
	b.tab, b.tabClose = tab, closeTab
	b.mu.Unlock()
	if old != nil {
		old()
	}
	return true
}
