// Package livetext carries a model's text from the runner making a call to the run pages that
// watch it, while the call streams (docs/console.md, "The model's text, live"). It is a
// side-channel and deliberately lossy: nothing is journaled, nothing replays from it, and a page
// that misses a piece sees a gap until the step completes and the journal's text replaces the
// live one. A Hub delivers in this process; a Relay (PostgreSQL's NOTIFY, see store.TextRelay)
// carries deltas between the processes of one deployment, so a page on the server follows a run a
// remote runner drives. Each call's text is bounded (MaxCallText), sent at most every FlushEvery,
// in pieces of at most MaxDelta bytes, and passes the run's redaction before it leaves the call.
package livetext

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// Bounds of the live text.
const (
	// MaxCallText is how much of one call's text is sent live; the rest shows once the step
	// completes (a Delta with Cut says so).
	MaxCallText = 64 << 10
	// MaxDelta is the most text one Delta carries (a relay's message stays far under
	// PostgreSQL's 8000-byte NOTIFY payload).
	MaxDelta = 1 << 10
	// FlushEvery is how often a call's new text is sent at most.
	FlushEvery = 100 * time.Millisecond
	// subBuffer is how many deltas a watcher may fall behind before it misses some.
	subBuffer = 256
	// maxInFlight is how many calls' text so far a hub keeps for watchers who arrive mid-call
	// (at most MaxCallText each); past it, a newcomer sees such a call from its next piece.
	maxInFlight = 256
)

// Delta is a piece of a model call's text. Offset counts the call's text before Text in UTF-16
// code units, as a browser's string length does, so a page can tell a piece that follows what it
// has (Offset equal to its length), one that replaces some of it (smaller: the call restarted or
// a redaction changed text already shown) and a gap (larger: it missed pieces).
type Delta struct {
	Run    string `json:"run"`
	Step   string `json:"step"`
	Offset int    `json:"offset"`
	Text   string `json:"text,omitempty"`
	// Done: the call's stream ended; its text comes from the journal once the step completes.
	Done bool `json:"done,omitempty"`
	// Cut: the call wrote more than MaxCallText; the rest is not sent live.
	Cut bool `json:"cut,omitempty"`
}

// Relay carries deltas to the other processes of the deployment. SendText must not block for
// long and may drop (the channel is lossy by design).
type Relay interface {
	SendText(payload []byte)
}

// Hub delivers deltas to the watchers in this process and, through Relay, to other processes.
type Hub struct {
	// Relay, when set (before use), sends every delta published here to other processes.
	Relay  Relay
	origin string

	mu   sync.Mutex
	subs map[string]map[chan Delta]struct{}
	// flight is the text so far of the calls streaming now, by run and step, so a page opened
	// mid-call starts with it.
	flight map[flightKey]*flightText
}

type flightKey struct{ run, step string }

type flightText struct {
	text  string
	units int
}

// NewHub returns a Hub with no watchers.
func NewHub() *Hub {
	var b [8]byte
	rand.Read(b[:])
	return &Hub{origin: hex.EncodeToString(b[:]), subs: map[string]map[chan Delta]struct{}{}, flight: map[flightKey]*flightText{}}
}

// wire is a delta between processes; O names the sending hub, so a hub ignores its own.
type wire struct {
	O string `json:"o"`
	Delta
}

// Publish delivers d to this process's watchers of d.Run and relays it.
func (h *Hub) Publish(d Delta) {
	if h == nil {
		return
	}
	h.deliver(d)
	if h.Relay != nil {
		if b, err := json.Marshal(wire{O: h.origin, Delta: d}); err == nil && len(b) < 7900 {
			h.Relay.SendText(b)
		}
	}
}

// Receive delivers a delta another process relayed (payloads this hub sent, or that do not
// decode, are ignored).
func (h *Hub) Receive(payload []byte) {
	var w wire
	if json.Unmarshal(payload, &w) != nil || w.O == h.origin || w.Run == "" {
		return
	}
	h.deliver(w.Delta)
}

func (h *Hub) deliver(d Delta) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.follow(d)
	for ch := range h.subs[d.Run] {
		select {
		case ch <- d:
		default: // a watcher this far behind misses the piece: its page shows a gap
		}
	}
}

// follow keeps the text so far of the call d is a piece of. Called with h.mu held.
func (h *Hub) follow(d Delta) {
	k := flightKey{d.Run, d.Step}
	f := h.flight[k]
	switch {
	case d.Done || d.Cut:
		delete(h.flight, k)
		return
	case f == nil && d.Offset == 0 && len(h.flight) < maxInFlight:
		f = &flightText{}
		h.flight[k] = f
	case f == nil:
		return
	}
	switch {
	case d.Offset == f.units:
	case d.Offset < f.units:
		f.text, f.units = cutUnits(f.text, d.Offset), d.Offset
	default:
		delete(h.flight, k) // a gap: what is kept would be wrong
		return
	}
	f.text += d.Text
	f.units += units(d.Text)
}

// cutUnits is s's start of n UTF-16 code units.
func cutUnits(s string, n int) string {
	u := 0
	for i, r := range s {
		if u >= n {
			return s[:i]
		}
		u += utf16.RuneLen(r)
	}
	return s
}

// Subscribe returns the deltas of run's calls from now on, until cancel is called; it starts
// with the text so far of each of the run's calls streaming now.
func (h *Hub) Subscribe(run string) (<-chan Delta, func()) {
	ch := make(chan Delta, subBuffer)
	h.mu.Lock()
	for k, f := range h.flight {
		if k.run == run && len(ch) < subBuffer/2 {
			for rest, off := f.text, 0; rest != ""; {
				n := validCut(rest, MaxDelta)
				if n == 0 {
					n = len(rest)
				}
				ch <- Delta{Run: run, Step: k.step, Offset: off, Text: rest[:n]}
				off += units(rest[:n])
				rest = rest[n:]
			}
		}
	}
	if h.subs[run] == nil {
		h.subs[run] = map[chan Delta]struct{}{}
	}
	h.subs[run][ch] = struct{}{}
	h.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			h.mu.Lock()
			delete(h.subs[run], ch)
			if len(h.subs[run]) == 0 {
				delete(h.subs, run)
			}
			h.mu.Unlock()
		})
	}
}

// Call is one model call's text on its way out: the model's pieces are gathered and sent at most
// every FlushEvery, redacted as a whole each time. With a redaction, the last hold bytes are kept
// back until the call ends, so a secret split across pieces is never sent in part.
type Call struct {
	h          *Hub
	run, step  string
	redact     func(string) string
	hold       int
	mu         sync.Mutex
	raw        strings.Builder
	sent       string // the redacted text sent so far
	sentUnits  int    // its length in UTF-16 code units
	timer      *time.Timer
	cut, ended bool
}

// Call starts the live text of step's call in run. redact (nil: none) is applied to the whole
// text before any of it is sent; hold is how many trailing bytes it may still change (the longest
// secret form it replaces). A nil Hub gives a nil Call, whose methods do nothing.
func (h *Hub) Call(run, step string, redact func(string) string, hold int) *Call {
	if h == nil {
		return nil
	}
	return &Call{h: h, run: run, step: step, redact: redact, hold: hold}
}

// Text adds a piece of the model's text.
func (c *Call) Text(s string) {
	if c == nil || s == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended || c.cut {
		return
	}
	if c.raw.Len()+len(s) > MaxCallText+c.hold {
		s = s[:validCut(s, max(0, MaxCallText+c.hold-c.raw.Len()))]
		c.raw.WriteString(s)
		c.flush(true)
		c.cut = true
		c.h.Publish(Delta{Run: c.run, Step: c.step, Offset: c.sentUnits, Cut: true})
		return
	}
	c.raw.WriteString(s)
	if c.timer == nil {
		c.timer = time.AfterFunc(FlushEvery, c.tick)
	}
}

func (c *Call) tick() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timer = nil
	if !c.ended && !c.cut {
		c.flush(false)
	}
}

// Restart voids the text so far: the call is tried again from its start.
func (c *Call) Restart() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return
	}
	c.raw.Reset()
	c.sent, c.sentUnits, c.cut = "", 0, false
	c.h.Publish(Delta{Run: c.run, Step: c.step})
}

// Close sends what is left and says the stream ended. The Call's owner calls it once the model
// call returns, whatever the outcome.
func (c *Call) Close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return
	}
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	if !c.cut {
		c.flush(true)
	}
	c.ended = true
	c.h.Publish(Delta{Run: c.run, Step: c.step, Offset: c.sentUnits, Done: true, Cut: c.cut})
}

// flush sends the redacted text not sent yet; all: the call's text is complete, nothing is held
// back. Called with c.mu held.
func (c *Call) flush(all bool) {
	text := c.raw.String()
	if c.redact != nil {
		text = c.redact(text)
	}
	if !all && c.redact != nil {
		text = text[:validCut(text, max(0, len(text)-c.hold))]
	}
	if len(text) > MaxCallText {
		text = text[:validCut(text, MaxCallText)]
	}
	if text == c.sent {
		return
	}
	from := c.sent
	if !strings.HasPrefix(text, c.sent) {
		// The redaction changed text already sent: send the longest common start's rest again.
		n := commonPrefix(text, c.sent)
		from = c.sent[:n]
		c.sentUnits = units(from)
	}
	rest := text[len(from):]
	off := c.sentUnits
	for rest != "" {
		n := validCut(rest, MaxDelta)
		if n == 0 {
			n = len(rest)
		}
		piece := rest[:n]
		c.h.Publish(Delta{Run: c.run, Step: c.step, Offset: off, Text: piece})
		off += units(piece)
		rest = rest[n:]
	}
	c.sent, c.sentUnits = text, off
}

// validCut is the largest n <= limit at which s may be cut without splitting a character.
func validCut(s string, limit int) int {
	if limit >= len(s) {
		return len(s)
	}
	for limit > 0 && !utf8.RuneStart(s[limit]) {
		limit--
	}
	return limit
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return validCut(a, n)
}

// units is s's length in UTF-16 code units.
func units(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}
