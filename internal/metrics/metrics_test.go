package metrics

import (
	"strings"
	"testing"
)

// Series are written in the Prometheus text format, label values escaped, and observations of
// the same labels add up in one series.
func TestWrite(t *testing.T) {
	t.Parallel()
	r := &Registry{}
	c := r.NewCounter("agentrun_test_total", "A test counter.", "kind", "why")
	c.Inc("a", `say "hi"`)
	c.Add(2, "a", `say "hi"`)
	c.Inc("b", "back\\slash\nnewline")
	var out strings.Builder
	r.Write(&out)
	for _, want := range []string{
		"# HELP agentrun_test_total A test counter.\n",
		"# TYPE agentrun_test_total counter\n",
		`agentrun_test_total{kind="a",why="say \"hi\""} 3` + "\n",
		`agentrun_test_total{kind="b",why="back\\slash\nnewline"} 1` + "\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
