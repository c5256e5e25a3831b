package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// nestedMaps is a document of maps nested n deep, each over items with the given maxConcurrency
// (0: unset), whose innermost body is one tool call.
func nestedMaps(n int, conc []int) string {
	body := `{"node": "call", "label": "leaf", "via": "tool", "tool": "t", "args": {"n": "{item}"}, "out": "R", "as": "r", "deadline_s": 30}`
	for i := n - 1; i >= 0; i-- {
		mc := ""
		if conc[i] > 0 {
			mc = fmt.Sprintf(`, "maxConcurrency": %d`, conc[i])
		}
		body = fmt.Sprintf(`{"node": "map", "label": "m%d", "itemsPath": "items", "as": "out%d"%s, "body": %s}`, i, i, mc, body)
	}
	return `{"v": 2, "name": "nest", "schemas": {"Out": {"type": "object"}, "R": {"type": "object"}}, "output": {"schemaId": "Out"}, "root": ` + body + `}`
}

// mapPtr is the pointer of the i-th map (0 outermost) of nestedMaps.
func mapPtr(i int) string { return "/root" + strings.Repeat("/body", i) }

func repeatConc(n, c int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = c
	}
	return out
}

func hasError(errs Invalid, code, ptr string) bool {
	for _, e := range errs {
		if e.Code == code && e.Pointer == ptr {
			return true
		}
	}
	return false
}

// TestMapBounds: the audit's document (30 nested maps, maxConcurrency 1e6) validated and then
// grew 750 MB every 5 s until the server died; now it is refused, each bound at the map that
// first goes over it: maxConcurrency over 256, nesting over 8, and nested maps that may run over
// 4096 items at once. Documents at each bound validate.
func TestMapBounds(t *testing.T) {
	_, errs := Validate([]byte(nestedMaps(30, repeatConc(30, 1e6))), Options{Runnable: true})
	for _, want := range []struct{ code, ptr string }{
		{CodeOutOfBounds, mapPtr(0) + "/maxConcurrency"},
		{CodeTooConcurrent, mapPtr(1) + "/maxConcurrency"},
		{CodeTooDeep, mapPtr(8)},
	} {
		if !hasError(errs, want.code, want.ptr) {
			t.Errorf("30 maps of 1e6: no %s at %s in\n%v", want.code, want.ptr, errs)
		}
	}
	if hasError(errs, CodeTooDeep, mapPtr(9)) || hasError(errs, CodeTooConcurrent, mapPtr(2)+"/maxConcurrency") {
		t.Errorf("a bound is reported again inside the map that went over it:\n%v", errs)
	}
	for _, c := range []struct {
		name     string
		n        int
		conc     []int
		code     string
		ptr      string
		accepted bool
	}{
		{"8 deep", 8, repeatConc(8, 1), "", "", true},
		{"9 deep", 9, repeatConc(9, 1), CodeTooDeep, mapPtr(8), false},
		{"256 at once", 1, []int{256}, "", "", true},
		{"257 at once", 1, []int{257}, CodeOutOfBounds, mapPtr(0) + "/maxConcurrency", false},
		{"64 x 64", 2, []int{64, 64}, "", "", true},
		{"64 x 65", 2, []int{64, 65}, CodeTooConcurrent, mapPtr(1) + "/maxConcurrency", false},
		{"defaults 4^6", 6, repeatConc(6, 0), "", "", true},
		{"defaults 4^7", 7, repeatConc(7, 0), CodeTooConcurrent, mapPtr(6) + "/maxConcurrency", false},
	} {
		_, errs := Validate([]byte(nestedMaps(c.n, c.conc)), Options{Runnable: true})
		if c.accepted && len(errs) > 0 {
			t.Errorf("%s: want valid, got %v", c.name, errs)
		}
		if !c.accepted && (len(errs) != 1 || !hasError(errs, c.code, c.ptr)) {
			t.Errorf("%s: want one %s at %s, got %v", c.name, c.code, c.ptr, errs)
		}
	}
}

// crowdHost counts the tool calls in flight; each waits for a moment or until more than the
// run's budget are in flight (which only a run without the budget reaches), so the calls a run
// starts at once pile up.
type crowdHost struct {
	recHost
	over chan struct{}
	once sync.Once
}

func (h *crowdHost) Tool(ctx context.Context, key, tool string, args map[string]any) (ToolResult, error) {
	h.enter(key)
	defer h.leave()
	h.mu.Lock()
	crowded := h.inFlight > MaxRunConcurrency
	h.mu.Unlock()
	if crowded {
		h.once.Do(func() { close(h.over) })
	}
	select {
	case <-h.over:
	case <-time.After(20 * time.Millisecond):
	}
	b, _ := json.Marshal(args)
	return ToolResult{Content: string(b)}, nil
}

// TestEngineRunConcurrency: nested maps that may run 64 × 64 items at once run at most
// MaxRunConcurrency effects at once across the run (the rest run in their turn), and every item
// still runs, its results in order.
func TestEngineRunConcurrency(t *testing.T) {
	w := mustValid(t, nestedMaps(2, []int{64, 64}))
	items := make([]any, 64)
	for i := range items {
		items[i] = float64(i)
	}
	h := &crowdHost{over: make(chan struct{})}
	res, err := w.Run(context.Background(), h, map[string]any{"items": items})
	if err != nil {
		t.Fatal(err)
	}
	if h.most > MaxRunConcurrency {
		t.Errorf("%d tool calls at once, want at most the run's %d", h.most, MaxRunConcurrency)
	}
	if len(h.keys) != 64*64 {
		t.Errorf("%d tool calls, want %d", len(h.keys), 64*64)
	}
	var out struct {
		Out0 []struct {
			Out1 []struct {
				R struct {
					Data struct{ N float64 }
				}
			}
		}
	}
	if err := json.Unmarshal(res.Output, &out); err != nil || len(out.Out0) != 64 || len(out.Out0[63].Out1) != 64 || out.Out0[63].Out1[63].R.Data.N != 63 {
		t.Errorf("output %.200s (%v)", res.Output, err)
	}
}
