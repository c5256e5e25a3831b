package livetext

import (
	"strings"
	"testing"
	"time"
)

// collect reads run's deltas until one with Done, and returns the text a page assembles from
// them (following the offsets as console.js does) and the deltas.
func collect(t *testing.T, ch <-chan Delta) (string, []Delta) {
	t.Helper()
	var ds []Delta
	text := []uint16{}
	timeout := time.After(5 * time.Second)
	for {
		select {
		case d := <-ch:
			ds = append(ds, d)
			if d.Offset > len(text) {
				t.Fatalf("a gap: offset %d after %d units", d.Offset, len(text))
			}
			text = append(text[:d.Offset], utf16Of(d.Text)...)
			if d.Done {
				return string(runesOf(text)), ds
			}
		case <-timeout:
			t.Fatalf("no Done delta; got %+v", ds)
		}
	}
}

func utf16Of(s string) []uint16 {
	var out []uint16
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			out = append(out, uint16(0xd800+(r>>10)), uint16(0xdc00+(r&0x3ff)))
		} else {
			out = append(out, uint16(r))
		}
	}
	return out
}

func runesOf(u []uint16) []rune {
	var out []rune
	for i := 0; i < len(u); i++ {
		if u[i] >= 0xd800 && u[i] < 0xdc00 && i+1 < len(u) {
			out = append(out, rune(u[i]-0xd800)<<10+rune(u[i+1]-0xdc00)+0x10000)
			i++
		} else {
			out = append(out, rune(u[i]))
		}
	}
	return out
}

func TestCallSendsTheTextInOrder(t *testing.T) {
	h := NewHub()
	ch, cancel := h.Subscribe("r1")
	defer cancel()
	other, cancelOther := h.Subscribe("r2")
	defer cancelOther()
	c := h.Call("r1", "t0/model", nil, 0)
	want := ""
	for i := 0; i < 20; i++ {
		p := "piece " + strings.Repeat("é😀", i%3) + " "
		want += p
		c.Text(p)
		if i == 10 {
			time.Sleep(FlushEvery + 50*time.Millisecond)
		}
	}
	c.Close()
	got, ds := collect(t, ch)
	if got != want {
		t.Errorf("assembled %q, want %q", got, want)
	}
	if len(ds) < 3 {
		t.Errorf("the text came in %d deltas; a pause in the middle should have sent a part early", len(ds))
	}
	select {
	case d := <-other:
		t.Errorf("another run's watcher got %+v", d)
	default:
	}
}

func TestCallRedactsAndHoldsBack(t *testing.T) {
	h := NewHub()
	ch, cancel := h.Subscribe("r")
	defer cancel()
	secret := "sk-verysecretvalue"
	redact := func(s string) string { return strings.ReplaceAll(s, secret, "[key]") }
	c := h.Call("r", "t0/model", redact, len(secret))
	c.Text("the key is sk-very")
	time.Sleep(FlushEvery + 50*time.Millisecond)
	c.Text("secretvalue, keep it")
	c.Close()
	got, ds := collect(t, ch)
	if got != "the key is [key], keep it" {
		t.Errorf("assembled %q", got)
	}
	for _, d := range ds {
		if strings.Contains(d.Text, "sk-") || strings.Contains(d.Text, "secretvalue") {
			t.Errorf("a delta carries part of the secret: %+v", d)
		}
	}
}

func TestCallRestartAndBounds(t *testing.T) {
	h := NewHub()
	ch, cancel := h.Subscribe("r")
	defer cancel()
	c := h.Call("r", "k", nil, 0)
	c.Text("first try")
	c.Restart()
	c.Text(strings.Repeat("x", MaxCallText+5000))
	c.Text("more")
	c.Close()
	got, ds := collect(t, ch)
	if got != strings.Repeat("x", MaxCallText) {
		t.Errorf("assembled %d bytes starting %q", len(got), got[:min(20, len(got))])
	}
	cut := false
	for _, d := range ds {
		cut = cut || d.Cut
		if len(d.Text) > MaxDelta {
			t.Errorf("a delta of %d bytes", len(d.Text))
		}
	}
	if !cut {
		t.Errorf("no delta says the text was cut")
	}
}

type loop struct{ to *Hub }

func (l loop) SendText(b []byte) { l.to.Receive(b) }

func TestRelayAcrossHubs(t *testing.T) {
	runner, server := NewHub(), NewHub()
	runner.Relay = loop{server}
	server.Relay = loop{server} // its own messages come back, as NOTIFY does: ignored
	ch, cancel := server.Subscribe("r")
	defer cancel()
	c := runner.Call("r", "t0/model", nil, 0)
	c.Text("hello from afar")
	c.Close()
	got, _ := collect(t, ch)
	if got != "hello from afar" {
		t.Errorf("relayed %q", got)
	}
	mine, cancel2 := server.Subscribe("s")
	defer cancel2()
	server.Publish(Delta{Run: "s", Step: "k", Text: "once"})
	n := 0
	for len(mine) > 0 {
		<-mine
		n++
	}
	if n != 1 {
		t.Errorf("a hub's own relayed delta was delivered %d times", n)
	}
}

func TestAWatcherArrivingMidCallGetsTheTextSoFar(t *testing.T) {
	h := NewHub()
	c := h.Call("r", "t1/model", nil, 0)
	c.Text("already written, ")
	time.Sleep(FlushEvery + 50*time.Millisecond)
	ch, cancel := h.Subscribe("r")
	defer cancel()
	c.Text("and the rest")
	c.Close()
	got, _ := collect(t, ch)
	if got != "already written, and the rest" {
		t.Errorf("assembled %q", got)
	}
	if len(h.flight) != 0 {
		t.Errorf("a finished call's text is still kept: %v", h.flight)
	}
}
