package chromium_test

import (
	"bytes"
	"errors"
	"fmt"
	"image/jpeg"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/computer/chromium"
)

// screenPage has a big button and a field at fixed places of the viewport; the button's click
// and the field's value show in the page's text.
const screenPage = `<!doctype html><title>screen</title>
<body style="margin:0">
<button id="b" style="position:absolute;left:100px;top:100px;width:300px;height:100px;background:#c00;border:0"
  onclick="document.getElementById('out').textContent='clicked'">Press</button>
<form onsubmit="document.getElementById('sent').textContent='submitted ' + this.q.value; return false">
<input name="q" id="q" style="position:absolute;left:100px;top:300px;width:300px;height:40px"
  oninput="document.getElementById('echo').textContent='value=' + this.value + ';'">
</form>
<p id="out" style="position:absolute;left:100px;top:400px">not clicked</p>
<p id="echo" style="position:absolute;left:100px;top:450px"></p>
<p id="sent" style="position:absolute;left:100px;top:500px"></p>
</body>`

func newScreen(t *testing.T) (computer.Browser, computer.Screen, string) {
	t.Helper()
	p := chromium.New()
	if a := p.Available(t.Context()); !a.Available {
		t.Skip(a.Reason)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, screenPage)
	}))
	t.Cleanup(srv.Close)
	c, err := p.Create(t.Context(), computer.Spec{Run: "screen", Folder: t.TempDir(), Kind: computer.KindBrowser, Network: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	b := c.(computer.Browser)
	s, ok := c.(computer.Screen)
	if !ok {
		t.Fatal("the chromium browser is not a computer.Screen")
	}
	if _, err := b.Open(t.Context(), srv.URL); err != nil {
		t.Fatal(err)
	}
	return b, s, srv.URL
}

func pageText(t *testing.T, b computer.Browser) string {
	t.Helper()
	p, err := b.Current(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return p.Text
}

// A frame is a JPEG of the viewport, one pixel per CSS pixel (the window is 1280×900).
func TestScreenFrame(t *testing.T) {
	t.Parallel()
	_, s, _ := newScreen(t)
	img, w, h, err := s.Frame(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	decoded, err := jpeg.Decode(bytes.NewReader(img))
	if err != nil {
		t.Fatalf("the frame is not a JPEG: %v", err)
	}
	if b := decoded.Bounds(); b.Dx() != w || b.Dy() != h || w != 1280 || h < 600 || h > 900 {
		t.Errorf("frame %v, reported %d×%d, want 1280 wide and the viewport's height", b, w, h)
	}
	// The red button (at 100..400 × 100..200) is drawn where the page places it, on white.
	red := func(x, y int) bool {
		r, g, b, _ := decoded.At(x, y).RGBA()
		return r>>8 > 150 && g>>8 < 80 && b>>8 < 80
	}
	if !red(110, 110) || !red(390, 190) || red(95, 150) || red(250, 205) {
		t.Errorf("the frame does not show the red button at 100..400 × 100..200")
	}
}

// A click at the button's coordinates clicks it; a click on the field focuses it, and typed
// text and keys go there.
func TestScreenClickTypeKey(t *testing.T) {
	t.Parallel()
	b, s, _ := newScreen(t)
	ctx := t.Context()
	if err := s.ClickAt(ctx, 50, 50); err != nil {
		t.Fatal(err)
	}
	if txt := pageText(t, b); !strings.Contains(txt, "not clicked") {
		t.Fatalf("a click beside the button clicked it: %q", txt)
	}
	if err := s.ClickAt(ctx, 250, 150); err != nil {
		t.Fatal(err)
	}
	if txt := pageText(t, b); !strings.Contains(txt, "clicked") || strings.Contains(txt, "not clicked") {
		t.Fatalf("after a click on the button: %q", txt)
	}
	if err := s.ClickAt(ctx, 250, 320); err != nil {
		t.Fatal(err)
	}
	if err := s.TypeText(ctx, "héllo wörld"); err != nil {
		t.Fatal(err)
	}
	if err := s.Key(ctx, "Backspace"); err != nil {
		t.Fatal(err)
	}
	if txt := pageText(t, b); !strings.Contains(txt, "value=héllo wörl;") {
		t.Fatalf("after typing and Backspace: %q", txt)
	}
	if err := s.Key(ctx, "Enter"); err != nil {
		t.Fatal(err)
	}
	if txt := pageText(t, b); !strings.Contains(txt, "submitted héllo wörl") {
		t.Fatalf("Enter did not submit the field's form: %q", txt)
	}
}

// A caller's mistakes are agent errors, not failures of the computer.
func TestScreenMistakes(t *testing.T) {
	t.Parallel()
	_, s, _ := newScreen(t)
	ctx := t.Context()
	for name, err := range map[string]error{
		"outside":  s.ClickAt(ctx, 5000, 10),
		"negative": s.ClickAt(ctx, -1, 10),
		"no key":   s.Key(ctx, "F13"),
		"no text":  s.TypeText(ctx, ""),
	} {
		if !computer.IsAgentError(err) {
			t.Errorf("%s: %v, want an agent error", name, err)
		}
	}
	if err := s.ClickAt(ctx, 5000, 10); err == nil || !strings.Contains(err.Error(), "outside the viewport, which is 1280×") {
		t.Errorf("outside: %v", err)
	}
}

// Every key the interface offers is one the browser presses.
func TestScreenKeys(t *testing.T) {
	t.Parallel()
	_, s, _ := newScreen(t)
	for _, k := range computer.ScreenKeys {
		if err := s.Key(t.Context(), k); err != nil {
			t.Errorf("Key(%q): %v", k, err)
		}
	}
	if !slices.Contains(computer.ScreenKeys, "Enter") || !slices.Contains(computer.ScreenKeys, "Tab") || !slices.Contains(computer.ScreenKeys, "Backspace") {
		t.Errorf("ScreenKeys = %v", computer.ScreenKeys)
	}
}

// A closed browser's screen says so with ErrClosed.
func TestScreenClosed(t *testing.T) {
	t.Parallel()
	b, s, _ := newScreen(t)
	b.Close()
	if _, _, _, err := s.Frame(t.Context()); !errors.Is(err, computer.ErrClosed) {
		t.Errorf("Frame after Close: %v", err)
	}
	if err := s.ClickAt(t.Context(), 1, 1); !errors.Is(err, computer.ErrClosed) {
		t.Errorf("ClickAt after Close: %v", err)
	}
}
