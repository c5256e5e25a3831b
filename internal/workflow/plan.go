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
	switch n.Kind {
	case "call":
		// A polled call runs at most once per interval within poll.deadline_s, and the issue.
		runs := times
		if n.Poll != nil && n.Poll.IntervalS > 0 {
			runs *= 1 + int64(n.Poll.DeadlineS/n.Poll.IntervalS)
		}
		switch n.Via {
		case "shell":
			p.ShellCalls += runs
			line += fmt.Sprintf(" shell (deadline %gs)", n.DeadlineS)
		case "executor":
			p.ExecutorCalls += runs
			line += fmt.Sprintf(" executor body (deadline %gs; its tool calls are not counted)", n.DeadlineS)
		default:
			p.ToolCalls += runs
			line += fmt.Sprintf(" tool %s (deadline %gs)", n.Tool, n.DeadlineS)
		}
		if n.Retry != nil && n.Retry.Attempts > 1 {
			line += fmt.Sprintf(", up to %d attempts", n.Retry.Attempts)
		}
		if n.Poll != nil {
			line += fmt.Sprintf(", polled every %gs for at most %gs (up to %d runs)", n.Poll.IntervalS, n.Poll.DeadlineS, runs/times)
		}
	case "sift":
		p.Questions += times
		p.SiftCalls += times
		line += fmt.Sprintf(" one structured model call (%d questions at most per call)", MaxQuestionsPerRequest)
	case "judge", "pick", "decide", "extract":
		q := times
		if n.Verify != nil {
			q *= 2 * int64(verifyDrives(n.Verify))
			line += fmt.Sprintf(" up to %d drives, each one structured model call and its review", verifyDrives(n.Verify))
		} else {
			line += " one structured model call"
		}
		p.Questions += q
	case "route":
		if n.ValuePath == "" {
			p.Questions += times
			line += " one structured model call"
		} else {
			line += " dispatch on " + n.ValuePath
		}
	case "artifact":
		if n.Type != "markdown" && n.Type != "report" {
			line += " the file " + n.Path
			break
		}
		p.AgentSteps += times
		line += " the agent's loop (bounded by the run's cap)"
	case "agent", "report":
		if n.Verify != nil {
			d := int64(verifyDrives(n.Verify))
			p.AgentSteps += times * d
			p.Questions += times * d
			line += fmt.Sprintf(" the agent's loop (bounded by the run's cap), up to %d drives, each reviewed by one structured model call", d)
			break
		}
		p.AgentSteps += times
		line += " the agent's loop (bounded by the run's cap)"
	case "code":
		p.CodeSteps += times
	case "escalate":
		if n.When != nil && n.When.Predicate == "ask" {
			p.Questions += times
		}
	case "loop":
		if n.Until != nil && n.Until.Predicate == "ask" {
			p.Questions += times * int64(n.MaxIters)
		}
	}
	p.Lines = append(p.Lines, line+"  ["+here+"]")
	switch n.Kind {
	case "chain":
		for _, s := range n.Steps {
			p.walk(s, path, times, input, depth+1)
		}
	case "map":
		items := int64(1)
		v, _ := lookupOK(input, n.ItemsPath)
		if list, ok := v.([]any); ok && input != nil {
			items = int64(len(list))
		} else {
			p.Unbounded = true
		}
		p.walk(n.Body, here+"/[i]", times*items, nil, depth+1)
	case "loop":
		p.walk(n.Body, here+"/[iter]", times*int64(n.MaxIters), nil, depth+1)
	case "parallel":
		for _, b := range n.Parallel {
			p.walk(b, here, times, input, depth+1)
		}
	case "route":
		// Every branch is listed; the counts take each (a bound, not a sum of what runs).
		for _, b := range n.Routes {
			p.walk(b.Body, here+"/"+b.Name, times, input, depth+1)
		}
	case "workflow":
		if n.Child != nil {
			p.walk(n.Child.Root, here, times, nil, depth+1)
		}
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
