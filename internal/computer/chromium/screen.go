package chromium

import (
	"bytes"
	"context"
	"fmt"
	"image/jpeg"
	"math"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"agentrun.dev/agentrun/internal/computer"
)

// The screen a person watches and drives (computer.Screen). Chromium runs at device scale 1
// (--force-device-scale-factor=1), so a frame has one pixel per CSS pixel of the viewport and a
// point of the frame is the point of the viewport with the same coordinates. Frames are read
// without waiting for an agent's action in progress (the person watches the agent work); the
// person's clicks, typing and keys are actions like the agent's, one at a time.

var _ computer.Screen = (*Browser)(nil)

const (
	// frameQuality is the JPEG quality of a frame: legible text at a fraction of a PNG's size.
	frameQuality = 70
	// screenTimeout bounds one frame or one input event.
	screenTimeout = 5 * time.Second
)

// screenKeys maps the keys Key presses (computer.ScreenKeys) to chromedp's key runes.
var screenKeys = map[string]string{
	"Enter": kb.Enter, "Tab": kb.Tab, "Backspace": kb.Backspace, "Delete": kb.Delete, "Escape": kb.Escape,
	"ArrowLeft": kb.ArrowLeft, "ArrowRight": kb.ArrowRight, "ArrowUp": kb.ArrowUp, "ArrowDown": kb.ArrowDown,
	"Home": kb.Home, "End": kb.End, "PageUp": kb.PageUp, "PageDown": kb.PageDown,
}

// Frame captures the viewport as a JPEG and returns it with its size in CSS pixels.
func (b *Browser) Frame(ctx context.Context) ([]byte, int, int, error) {
	actx, cancel, err := b.alive(ctx, screenTimeout)
	if err != nil {
		return nil, 0, 0, err
	}
	defer cancel()
	shot, err := chromedp.Run(actx, chromedp.Action[[]byte](func(ctx context.Context, t *chromedp.Target) ([]byte, error) {
		q, fromSurface := int64(frameQuality), true
		r, err := cdp.Call(ctx, t, page.CaptureScreenshot, page.CaptureScreenshotParams{
			Format: page.CaptureScreenshotFormatJpeg, Quality: &q, FromSurface: &fromSurface})
		if err != nil {
			return nil, err
		}
		return r.Data, nil
	}))
	if err != nil {
		return nil, 0, 0, b.classify(ctx, "capture the screen", err)
	}
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(shot))
	if err != nil {
		return nil, 0, 0, fmt.Errorf("capture the screen: chromium sent no JPEG: %w", err)
	}
	return shot, cfg.Width, cfg.Height, nil
}

// viewport returns the size of the visual viewport in CSS pixels.
func viewport(ctx context.Context, t *chromedp.Target) (w, h int, err error) {
	m, err := cdp.Call(ctx, t, page.GetLayoutMetrics, cdp.Empty{})
	if err != nil {
		return 0, 0, err
	}
	if m.CSSVisualViewport == nil {
		return 0, 0, fmt.Errorf("chromium reported no visual viewport")
	}
	return int(math.Round(m.CSSVisualViewport.ClientWidth)), int(math.Round(m.CSSVisualViewport.ClientHeight)), nil
}

// ClickAt clicks the left mouse button at (x, y) of the viewport, after moving the mouse there
// (so the page sees it hover first, as with a real mouse).
func (b *Browser) ClickAt(ctx context.Context, x, y int) error {
	b.act.Lock()
	defer b.act.Unlock()
	actx, cancel, err := b.alive(ctx, screenTimeout)
	if err != nil {
		return err
	}
	defer cancel()
	var outside error
	err = chromedp.Do(actx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		w, h, err := viewport(ctx, t)
		if err != nil {
			return err
		}
		if x < 0 || y < 0 || x >= w || y >= h {
			outside = computer.Agentf("(%d, %d) is outside the viewport, which is %d×%d CSS pixels", x, y, w, h)
			return nil
		}
		fx, fy := float64(x), float64(y)
		if _, err := chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, fx, fy)(ctx, t); err != nil {
			return err
		}
		_, err = chromedp.MouseClickXY(fx, fy)(ctx, t)
		return err
	}))
	if err != nil {
		return b.classify(ctx, fmt.Sprintf("click at (%d, %d)", x, y), err)
	}
	return outside
}

// TypeText inserts text where the focus is (Input.insertText: the page sees input events, as
// from a keyboard that types whole words).
func (b *Browser) TypeText(ctx context.Context, text string) error {
	if err := computer.CheckTypeText(text); err != nil {
		return err
	}
	b.act.Lock()
	defer b.act.Unlock()
	actx, cancel, err := b.alive(ctx, screenTimeout)
	if err != nil {
		return err
	}
	defer cancel()
	err = chromedp.Do(actx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, input.InsertText, input.InsertTextParams{Text: text})
		return err
	}))
	return b.classify(ctx, "type", err)
}

// Key presses and releases one of computer.ScreenKeys (Input.dispatchKeyEvent: keyDown, the
// character Enter types, keyUp).
func (b *Browser) Key(ctx context.Context, key string) error {
	k, ok := screenKeys[key]
	if !ok {
		return computer.Agentf("no key %q: the keys are %s", key, strings.Join(computer.ScreenKeys, ", "))
	}
	b.act.Lock()
	defer b.act.Unlock()
	actx, cancel, err := b.alive(ctx, screenTimeout)
	if err != nil {
		return err
	}
	defer cancel()
	return b.classify(ctx, "press "+key, chromedp.Do(actx, chromedp.KeyEvent(k)))
}
