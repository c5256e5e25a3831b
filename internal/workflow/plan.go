package workflow

import (
	"fmt"
	"strings"
)

// Plan is what a dry run prints: every node with the most times it can run, and the effects and
// model calls of the whole run at worst. Nothing is called to make it.
type Plan struct {
	Lines []string `json:"lines"`
	// Worst-case counts over the whole run; Unbounded says a map's item count is not known from
	// the input, so the counts are per item of that map.
	ToolCalls  int64 `json:"toolCalls"`
	ShellCalls int64 `json:"shellCalls"`
	Questions  int64 `json:"questions"`
	AgentSteps int64 `json:"agentSteps"`
	CodeSteps  int64 `json:"codeSteps"`
	// SiftCalls are the typed questions that are a sift's (counted in Questions too): their
	// answers grow with the items, up to AnswerTokens(MaxQuestionsPerRequest).
	SiftCalls int64 `json:"siftCalls"`
	// ExecutorCalls are calls via executor, whose bodies' tool calls are known only when they run.
	ExecutorCalls int64 `json:"executorCalls"`
	Unbounded     bool  `json:"unbounded"`
}

// MakePlan walks the document with the run's input (nil: unknown); a map over an input list
// runs once per item, a loop at most maxIters times, a route takes its costliest branch.
func (w *Workflow) MakePlan(input map[string]any) *Plan {
	p := &Plan{}
	p.walk(w.Root, "", 1, input, 0)
	return p
}

func (p *Plan) walk(n *Node, path string, times int64, input map[string]any, depth int) {
	if n == nil {
		return
	}
	ind := strings.Repeat("  ", depth)
	id := n.Label
	if id == "" {
		id = n.Kind
	}
	here := path + "/" + id
	line := fmt.Sprintf("%s%s %q", ind, n.Kind, id)
	if times != 1 {
		line += fmt.Sprintf(" ×%d", times)
	}
	if k := kinds[n.Kind]; k != nil && k.plan != nil {
		line = k.plan(p, n, times, line)
	}
	p.Lines = append(p.Lines, line+"  ["+here+"]")
	if k := kinds[n.Kind]; k != nil && k.planBody != nil {
		k.planBody(p, n, path, here, times, input, depth)
	}
}

func canonicalIndex(s string) (int, bool) {
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' || n > 1<<30 {
			return 0, false
		}
		n = n*10 + int(r-'0')
	}
	return n, true
}

func verifyDrives(v *Verify) int {
	if v.MaxDrives > 0 {
		return v.MaxDrives
	}
	return 2
}
