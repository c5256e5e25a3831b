package trigger

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

// A template of nested ranges over a delivery's list (1000 items, four deep: 10^12 copies of 16
// bytes, 16 TB) once rendered whole before its size was checked. It fails at the 256 KiB now,
// having held next to nothing.
func TestRenderBoundsNestedRanges(t *testing.T) {
	items := make([]any, 1000)
	for i := range items {
		items[i] = i
	}
	event := map[string]any{"body": map[string]any{"items": items}}
	tmpl := `{{range .body.items}}{{range $.body.items}}{{range $.body.items}}{{range $.body.items}}0123456789abcdef{{end}}{{end}}{{end}}{{end}}`
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	out, err := Render(tmpl, event)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, errInputTooLarge) || !strings.Contains(err.Error(), "262144 bytes (256 KiB)") {
		t.Fatalf("nested ranges: %d bytes, %v; want the 256 KiB limit's error", len(out), err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("rendering up to the limit allocated %d MB; want under 16", grew>>20)
	}
	// At the limit exactly it renders.
	exact := map[string]any{"s": strings.Repeat("x", MaxInput)}
	if out, err := Render("{{.s}}", exact); err != nil || len(out) != MaxInput {
		t.Errorf("an input of exactly %d bytes: %d bytes, %v", MaxInput, len(out), err)
	}
}
