package metrics

import (
	"strings"
	"sync"
	"testing"
)

// Scrapes that recompute a gauge while others write it never show a half-filled family: each
// write has every series (a Reset followed by Sets let one scrape write the family empty).
func TestSetAllIsWhole(t *testing.T) {
	t.Parallel()
	r := &Registry{}
	g := r.NewGauge("agentrun_test_runs", "Runs by phase.", "phase")
	phases := []string{"Queued", "Running", "Waiting", "Succeeded"}
	fill := func(n float64) {
		g.SetAll(func(set func(float64, ...string)) {
			for _, p := range phases {
				set(n, p)
			}
		})
	}
	fill(0)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 300 {
				fill(float64(i*1000 + j))
				var out strings.Builder
				r.Write(&out)
				if got := strings.Count(out.String(), "agentrun_test_runs{phase="); got != len(phases) {
					t.Errorf("a write has %d series, want %d:\n%s", got, len(phases), out.String())
					return
				}
			}
		}()
	}
	wg.Wait()
}
