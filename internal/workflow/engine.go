package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Host performs a workflow's effects. The engine never does I/O: every tool call, shell command,
// typed question and agent step goes through the host with its step key, the node's execution
// path (see Key), which is the same on every replay of the same document and input. A host that
// journals each effect under its key answers a completed one from the journal, so a restarted run
// repeats nothing completed. A host may be called from several goroutines at once (map items).
type Host interface {
	// Tool calls a tool with its interpolated arguments.
	Tool(ctx context.Context, key, tool string, args map[string]any) (ToolResult, error)
	// Shell runs a literal command with its environment in the run's computer.
	Shell(ctx context.Context, key, command string, env map[string]string, deadline time.Duration) (ShellResult, error)
	// Ask is one structured model call: the answer matches q.Schema, with a confidence.
	Ask(ctx context.Context, key string, q Question) (Answer, error)
	// Agent runs the agent's loop on a sub-task and returns its final answer text.
	Agent(ctx context.Context, key string, t Task) (string, error)
}

// Timers is what a host also offers to run polled calls; a host without it fails a polled call
// naming it (kind_not_runnable).
type Timers interface {
	// Clock is a durable reading of the time: the first time, the host records now as step key
	// (titled title); on a replay it answers the recorded time. A polled call's waits are
	// computed from these readings, so a restarted run waits only for what is left.
	Clock(ctx context.Context, key, title string) (time.Time, error)
	// Sleep waits until until (at once when it has passed), saying on the run's timeline what
	// it waits on (what), or until ctx ends.
	Sleep(ctx context.Context, key string, until time.Time, what string) error
}

// Files is what a host also offers to check a shell call's produces and run file artifacts; a
// host without it fails them naming the node (kind_not_runnable).
type Files interface {
	// Stat returns the size of a file in the run folder (rel is relative to it), or an error
	// saying why it is not there.
	Stat(ctx context.Context, rel string) (int64, error)
}

// ToolResult is what a tool answered: its text, and whether the tool reported an error.
type ToolResult struct {
	Content string
	IsError bool
}

// ShellResult is a shell call's value as the language has it.
type ShellResult struct {
	Code      int    `json:"code"`
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	Truncated bool   `json:"truncated,omitempty"`
}

// Question is a typed question: instructions, the state it judges, and the answer's schema.
type Question struct {
	Node         string
	Kind         string // decide, extract, judge, route, ask
	Instructions string
	State        map[string]any
	// Schema is the answer's JSON Schema (the node's out schema, or the branch names).
	Schema json.RawMessage
	Tier   string
	// MaxTokens, when set, is the most the answer may take (a sift's answer grows with its items).
	MaxTokens int
	// Definitions are the document's schemas, which Schema may refer to as
	// {"$ref": "#/definitions/ID"} (JSON Schema draft 7, as the language defines them).
	Definitions map[string]json.RawMessage
}

// Answer is a typed question's answer and the model's confidence in it (0..1).
type Answer struct {
	Value      json.RawMessage `json:"value"`
	Confidence float64         `json:"confidence"`
}

// Task is an agent node's sub-task.
type Task struct {
	Node         string
	Instructions string
	State        map[string]any
	// Schema, when set, is the answer's JSON Schema: the answer is that JSON.
	Schema json.RawMessage
	Tools  []string
	// Review, when set (the node has verify), reviews an answer before the host returns it: a
	// host that can continues the same conversation with feedback when it is not accepted, and
	// asks again; err ends the node (the reviews are spent). A host may ignore it: the engine
	// reviews what the host returns, and sends a rejected answer back for another drive.
	Review func(ctx context.Context, answer string) (accepted bool, feedback string, err error)
}

// Result is how a run ended: complete with its output, or escalated.
type Result struct {
	Output     json.RawMessage `json:"output,omitempty"`
	State      map[string]any  `json:"-"`
	Escalation *Escalation     `json:"escalation,omitempty"`
}

// Escalation is an escalate node's stop.
type Escalation struct {
	Kind    string `json:"kind"`
	Stage   string `json:"stage"`
	Summary string `json:"summary"`
	Label   string `json:"label"`
	Path    string `json:"path"`
}

// Failure is a node that failed; the run fails with it.
type Failure struct {
	Code  string // effect_failure, effect_exit, output_invalid, state_invalid, code_failed, ...
	Node  string
	Key   string
	Cause string
}

func (f *Failure) Error() string {
	return fmt.Sprintf("workflow node %q (%s) failed: %s: %s", f.Node, f.Key, f.Code, f.Cause)
}

// The failure codes of a run.
const (
	FailEffect        = "effect_failure"
	FailExit          = "effect_exit"
	FailTimeout       = "effect_timeout"
	FailOutput        = "output_invalid"
	FailState         = "state_invalid"
	FailCode          = "code_failed"
	FailCodeMemory    = "code_memory"
	FailInput         = "input_invalid"
	FailRequires      = "requires_unmet"
	FailPath          = "path_missing"
	FailBranch        = "branch_unknown"
	FailWorkflowOut   = "workflow_output_invalid"
	FailProduces      = "effect_produces_missing"
	FailVerify        = "verification_failed"
	FailNotRunnable   = CodeNotRunnable
	defaultMapWorkers = 4
)

// NotRunnable lists the nodes of w this engine does not run, each as "kind at label"; a run
// refuses to start while it is not empty.
func (w *Workflow) NotRunnable() []string {
	var out []string
	var walk func(n *Node)
	walk = func(n *Node) {
		if n == nil {
			return
		}
		id := n.Label
		if id == "" {
			id = n.Kind
		}
		if !RunnableKinds[n.Kind] {
			out = append(out, fmt.Sprintf("%s node %q", n.Kind, id))
		}
		if n.SOPSection != "" {
			out = append(out, fmt.Sprintf("sopSection of %q (this server has no SOP)", id))
		}
		for _, s := range n.Steps {
			walk(s)
		}
		walk(n.Body)
		for _, b := range n.Parallel {
			walk(b)
		}
		for _, b := range n.Routes {
			walk(b.Body)
		}
		if n.Child != nil {
			walk(n.Child.Root)
		}
	}
	walk(w.Root)
	return out
}

// Run runs w on input with h. It returns the output, or the escalation, or the failure.
func (w *Workflow) Run(ctx context.Context, h Host, input map[string]any) (*Result, error) {
	if nr := w.NotRunnable(); len(nr) > 0 {
		return nil, &Failure{Code: FailNotRunnable, Node: w.Name, Key: "wf", Cause: "this server does not run " + strings.Join(nr, ", ")}
	}
	if input == nil {
		input = map[string]any{}
	}
	if err := w.CheckInput(input); err != nil {
		return nil, &Failure{Code: FailInput, Node: w.Name, Key: "wf", Cause: err.Error()}
	}
	r := &runner{w: w, h: h, slots: make(chan struct{}, MaxRunConcurrency)}
	r.slots <- struct{}{} // this goroutine's
	state := cloneMap(input)
	st, err := r.node(ctx, w.Root, "wf", state)
	if err != nil {
		var esc *escalated
		if errors.As(err, &esc) {
			return &Result{State: esc.state, Escalation: &esc.Escalation}, nil
		}
		return nil, err
	}
	var out any = st
	if w.Output.Path != "" {
		v, ok := lookupOK(st, w.Output.Path)
		if !ok {
			return nil, &Failure{Code: FailPath, Node: w.Name, Key: "wf", Cause: fmt.Sprintf("output.path %q is not in the final state", w.Output.Path)}
		}
		out = v
	}
	out = withoutReserved(out)
	if err := w.schemas.check(w.Output.SchemaID, out); err != nil {
		return nil, &Failure{Code: FailWorkflowOut, Node: w.Name, Key: "wf", Cause: fmt.Sprintf("the output does not match schema %q: %v", w.Output.SchemaID, err)}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encode output: %w", err)
	}
	return &Result{Output: b, State: st}, nil
}

type runner struct {
	w *Workflow
	h Host
	// slots is the run's goroutine budget (MaxRunConcurrency), shared by its children.
	slots chan struct{}
}

// MaxRunConcurrency bounds the goroutines one run's map items and parallel branches take at
// once, however the maps nest: the document's maxConcurrency is what a map may run at once, this
// is what the whole run may.
const MaxRunConcurrency = 256

// spawn runs f on a goroutine of its own (counted in wg) when the run has a slot free, and in
// the caller's goroutine when it has none: an item the budget has no room for runs in its turn,
// so the run goes on (more slowly) and never waits on a slot an enclosing item holds.
func (r *runner) spawn(wg *sync.WaitGroup, f func()) {
	select {
	case r.slots <- struct{}{}:
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-r.slots }()
			f()
		}()
	default:
		f()
	}
}

// escalated carries an escalate node's stop up through the enclosing nodes.
type escalated struct {
	Escalation
	state map[string]any
}

func (e *escalated) Error() string { return "escalated: " + e.Summary }

// Key is the step key of a node at path: its label, path-escaped so a "/" in a label cannot
// imitate nesting.
func Key(path, label string) string { return path + "/" + escapeSeg(label) }

func escapeSeg(s string) string {
	if !strings.ContainsAny(s, "%/") {
		return s
	}
	return segEscaper.Replace(s)
}

// segEscaper is built once: a Replacer made per key cost 6 kB (10% of a runner's allocations).
var segEscaper = strings.NewReplacer("%", "%25", "/", "%2F")

func (r *runner) fail(n *Node, key, code, format string, a ...any) error {
	return &Failure{Code: code, Node: n.Label, Key: key, Cause: fmt.Sprintf(format, a...)}
}

// node runs n from state and returns the state after it. State is never shared: a node that
// changes it works on its own copy.
func (r *runner) node(ctx context.Context, n *Node, path string, state map[string]any) (map[string]any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	key := Key(path, n.Label)
	if err := r.requires(n, key, state); err != nil {
		return nil, err
	}
	if k := kinds[n.Kind]; k != nil && k.run != nil {
		return k.run(r, ctx, n, path, key, state)
	}
	return nil, r.fail(n, key, FailNotRunnable, "this server does not run %q nodes", n.Kind)
}

// requires stops the run when a path the node requires holds no evidence: missing, null, a blank
// string, an empty array or object (false and 0 pass).
func (r *runner) requires(n *Node, key string, state map[string]any) error {
	for _, p := range n.Requires {
		v, ok := lookupOK(state, p)
		if !ok || empty(v) {
			return r.fail(n, key, FailRequires, "requires %q, which holds no evidence here", p)
		}
	}
	return nil
}

func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return strings.TrimSpace(x) == ""
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// write puts v at k after checking it against the node's out schema.
func (r *runner) write(n *Node, key string, state map[string]any, k string, v any) (map[string]any, error) {
	if n.Out != "" && n.Kind != "judge" {
		if err := r.w.schemas.check(n.Out, v); err != nil {
			return nil, r.fail(n, key, FailOutput, "the value does not match schema %q: %v", n.Out, err)
		}
	}
	next := cloneMap(state)
	next[k] = v
	return next, nil
}

func (r *runner) call(ctx context.Context, n *Node, key string, state map[string]any) (any, error) {
	attempts := 1
	var backoff time.Duration
	retryExit := false
	if n.Retry != nil {
		attempts = max(n.Retry.Attempts, 1)
		backoff = seconds(n.Retry.BackoffS)
		for _, on := range n.Retry.On {
			retryExit = retryExit || on == "exit" || on == "effect_exit"
		}
	}
	deadline := seconds(n.DeadlineS)
	var last error
	for a := 1; a <= attempts; a++ {
		k := key
		if a > 1 {
			// Each attempt is its own step: a retry after a failure is a new effect, not a replay.
			k = fmt.Sprintf("%s#%d", key, a)
			if backoff > 0 {
				t := time.NewTimer(backoff)
				select {
				case <-ctx.Done():
					t.Stop()
					return nil, ctx.Err()
				case <-t.C:
				}
			}
		}
		cctx, cancel := context.WithTimeout(ctx, deadline)
		v, retry, err := r.callOnce(cctx, n, k, state, retryExit)
		timedOut := errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
		cancel()
		if err == nil {
			return v, nil
		}
		if timedOut {
			// Cut off at deadline_s: whether the effect happened is not known, so it is not retried.
			return nil, r.fail(n, k, FailTimeout, "no result within deadline_s (%gs): %v", n.DeadlineS, err)
		}
		if ctx.Err() != nil || !retry {
			return nil, err
		}
		last = err
	}
	return nil, last
}

func (r *runner) callOnce(ctx context.Context, n *Node, key string, state map[string]any, retryExit bool) (any, bool, error) {
	switch n.Via {
	case "tool":
		args, err := interpolate(n.Args, state)
		if err != nil {
			return nil, false, r.fail(n, key, FailPath, "args: %v", err)
		}
		am, _ := args.(map[string]any)
		res, err := r.h.Tool(ctx, key, n.Tool, am)
		if err != nil {
			return nil, false, err
		}
		if res.IsError {
			return nil, true, r.fail(n, key, FailEffect, "%s answered an error: %s", n.Tool, firstLine(res.Content))
		}
		v := map[string]any{"ok": true, "content": res.Content}
		var data any
		if json.Unmarshal([]byte(res.Content), &data) == nil {
			v["data"] = data
		}
		return v, false, nil
	case "shell":
		envAny, err := interpolate(anyMap(n.Env), state)
		if err != nil {
			return nil, false, r.fail(n, key, FailPath, "env: %v", err)
		}
		env := map[string]string{}
		for k, x := range envAny.(map[string]any) {
			if s, ok := x.(string); ok {
				env[k] = s
			} else {
				b, _ := json.Marshal(x)
				env[k] = string(b)
			}
		}
		res, err := r.h.Shell(ctx, key, n.Command, env, seconds(n.DeadlineS))
		if err != nil {
			return nil, false, err
		}
		if res.Code != 0 {
			return nil, retryExit, r.fail(n, key, FailExit, "the command exited with code %d: %s", res.Code, firstLine(res.Stderr))
		}
		if err := r.produced(ctx, n, key, state); err != nil {
			return nil, false, err
		}
		return map[string]any{"code": float64(res.Code), "stdout": res.Stdout, "stderr": res.Stderr, "truncated": res.Truncated}, false, nil
	case "executor":
		v, err := r.executor(ctx, n, key, state)
		return v, false, err
	}
	return nil, false, r.fail(n, key, FailNotRunnable, "this server does not run calls via %q", n.Via)
}

// view is what a question or an agent sees: the node's state map interpolated, or the whole state.
func (r *runner) view(n *Node, key string, state map[string]any) (map[string]any, error) {
	if n.State == nil {
		return withoutReserved(state).(map[string]any), nil
	}
	v, err := interpolate(n.State, state)
	if err != nil {
		return nil, r.fail(n, key, FailPath, "state: %v", err)
	}
	return v.(map[string]any), nil
}

func (r *runner) schema(id string) json.RawMessage { return r.w.Schemas[id] }

// ask asks the host a typed question, with the document's schemas its answer's schema may refer to.
func (r *runner) ask(ctx context.Context, key string, q Question) (Answer, error) {
	q.Definitions = r.w.Schemas
	return r.h.Ask(ctx, key, q)
}

// question asks a decide, extract or judge node's one typed question and writes its answer.
func (r *runner) question(ctx context.Context, n *Node, key string, state map[string]any) (map[string]any, error) {
	view, err := r.view(n, key, state)
	if err != nil {
		return nil, err
	}
	instr := n.Instructions
	switch n.Kind {
	case "extract":
		instr += "\n\nTranscribe only facts already present in the state: null for a field the state does not hold; invent nothing."
	case "judge":
		instr = "Answer each question of the schema (each property's description is its question) from the state."
	}
	sch := r.schema(n.Out)
	if sch == nil {
		sch = json.RawMessage(`{"type": "string"}`)
	}
	var conf float64
	// One drive is one question (a decide or extract node's verify may ask it again, keyed by drive).
	drive := func(ctx context.Context, dk, feedback string, _ reviewFunc) (any, error) {
		ans, err := r.ask(ctx, dk, Question{Node: n.Label, Kind: n.Kind, Instructions: instr + feedback, State: view, Schema: sch, Tier: n.Tier})
		if err != nil {
			return nil, err
		}
		var v any
		if err := json.Unmarshal(ans.Value, &v); err != nil {
			return nil, r.fail(n, dk, FailOutput, "the answer is not JSON: %v", err)
		}
		if err := r.w.schemas.check(n.Out, v); n.Out != "" && err != nil {
			return nil, r.fail(n, dk, FailOutput, "the answer does not match schema %q: %v", n.Out, err)
		}
		conf = ans.Confidence
		return v, nil
	}
	k := n.As
	if k == "" {
		k = n.Label
	}
	next, err := r.drives(ctx, n, key, k, state, drive)
	if err != nil {
		return nil, err
	}
	if n.Kind == "judge" {
		next[k+"$answers"] = map[string]any{"answers": next[k], "confidence": conf}
	}
	return next, nil
}

// route takes one named branch: by the string at valuePath (no model call), or by one typed
// question whose answer is a branch name; below unsure.gte's confidence it takes unsure.branch.
func (r *runner) route(ctx context.Context, n *Node, key, path string, state map[string]any) (map[string]any, error) {
	var taken string
	rec := map[string]any{}
	if n.ValuePath != "" {
		v, ok := lookupOK(state, n.ValuePath)
		s, isStr := v.(string)
		switch {
		case ok && !isStr:
			return nil, r.fail(n, key, FailBranch, "valuePath %q holds %T, not a string", n.ValuePath, v)
		case ok && r.hasBranch(n, s):
			taken = s
		case n.Otherwise != "":
			taken = n.Otherwise
			rec["fallback"] = true
		default:
			return nil, r.fail(n, key, FailBranch, "valuePath %q holds %q, which names no branch, and the route has no otherwise", n.ValuePath, s)
		}
		rec["value"] = v
	} else {
		view, err := r.view(n, key, state)
		if err != nil {
			return nil, err
		}
		names := make([]string, 0, len(n.Routes))
		var crit strings.Builder
		for _, b := range n.Routes {
			names = append(names, b.Name)
			if b.Criteria != "" {
				fmt.Fprintf(&crit, "\n- %s: %s", b.Name, b.Criteria)
			}
		}
		enc, _ := json.Marshal(names)
		sch := json.RawMessage(`{"type": "string", "enum": ` + string(enc) + `}`)
		instr := n.Instructions
		if instr == "" {
			instr = "Choose the branch that fits the state."
		}
		if crit.Len() > 0 {
			instr += "\n\nThe branches:" + crit.String()
		}
		ans, err := r.ask(ctx, key, Question{Node: n.Label, Kind: "route", Instructions: instr, State: view, Schema: sch})
		if err != nil {
			return nil, err
		}
		var s string
		if err := json.Unmarshal(ans.Value, &s); err != nil || !r.hasBranch(n, s) {
			return nil, r.fail(n, key, FailBranch, "the answer %s names no branch (%s)", ans.Value, strings.Join(names, ", "))
		}
		taken = s
		rec["answer"], rec["confidence"] = s, ans.Confidence
		if n.Unsure != nil && ans.Confidence < n.Unsure.Gte {
			taken = n.Unsure.Branch
			rec["unsure"] = true
		}
	}
	rec["taken"] = taken
	next := state
	if n.As != "" {
		next = cloneMap(state)
		next[n.As] = rec
	}
	for _, b := range n.Routes {
		if b.Name == taken {
			return r.node(ctx, b.Body, key+">"+escapeSeg(taken), next)
		}
	}
	return nil, r.fail(n, key, FailBranch, "no branch %q", taken)
}

// parallel runs every branch at once from the state before it; each branch's writes are merged
// in branch order, and a key two branches write fails the node (validation refuses documents
// where that can happen; this is the check at run time). Branches all run to the end, and the
// first branch's failure in document order is the node's.
func (r *runner) parallel(ctx context.Context, n *Node, key string, state map[string]any) (map[string]any, error) {
	outs := make([]map[string]any, len(n.Parallel))
	errs := make([]error, len(n.Parallel))
	var wg sync.WaitGroup
	for i, b := range n.Parallel {
		r.spawn(&wg, func() {
			in := cloneMap(state)
			out, err := r.node(ctx, b, key, in)
			if err == nil {
				outs[i] = writes(in, out)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	next := cloneMap(state)
	by := map[string]int{}
	for i, w := range outs {
		for k, v := range w {
			if j, ok := by[k]; ok {
				return nil, r.fail(n, key, CodeParallelConflict, "branches %d and %d both wrote %q", j, i, k)
			}
			by[k] = i
			next[k] = v
		}
	}
	return next, nil
}

// child runs an inline child workflow: its input map (interpolated) is the child's whole initial
// state, its effects are keyed under this node's key, and its output, checked against the child's
// output schema and then this node's out, is written at as.
func (r *runner) child(ctx context.Context, n *Node, key string, state map[string]any) (map[string]any, error) {
	if n.Child == nil {
		return nil, r.fail(n, key, FailNotRunnable, "the child workflow is not resolved")
	}
	in, err := interpolate(n.Input, state)
	if err != nil {
		return nil, r.fail(n, key, FailPath, "input: %v", err)
	}
	cin, _ := in.(map[string]any)
	if cin == nil {
		cin = map[string]any{}
	}
	if err := n.Child.CheckInput(cin); err != nil {
		return nil, r.fail(n, key, FailInput, "child %q: %v", n.Child.Name, err)
	}
	cr := &runner{w: n.Child, h: r.h, slots: r.slots}
	st, err := cr.node(ctx, n.Child.Root, key, cloneMap(cin))
	if err != nil {
		return nil, err
	}
	var out any = st
	if p := n.Child.Output.Path; p != "" {
		v, ok := lookupOK(st, p)
		if !ok {
			return nil, r.fail(n, key, FailPath, "child %q: output.path %q is not in its final state", n.Child.Name, p)
		}
		out = v
	}
	out = withoutReserved(out)
	if err := n.Child.schemas.check(n.Child.Output.SchemaID, out); err != nil {
		return nil, r.fail(n, key, FailWorkflowOut, "child %q: the output does not match its schema %q: %v", n.Child.Name, n.Child.Output.SchemaID, err)
	}
	return r.write(n, key, state, n.As, out)
}

// pick asks one question choosing among the items at itemsPath, each described by describe
// (interpolated with item); allowNone adds "none". Its value is {index, item, none, option}.
func (r *runner) pick(ctx context.Context, n *Node, key string, state map[string]any) (map[string]any, error) {
	v, _ := lookupOK(state, n.ItemsPath)
	items, ok := v.([]any)
	if !ok || (len(items) == 0 && !n.AllowNone) {
		return nil, r.fail(n, key, FailPath, "itemsPath %q holds no items to pick from", n.ItemsPath)
	}
	view, err := r.view(n, key, state)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(items)+1)
	options := make([]string, len(items))
	var list strings.Builder
	for i, it := range items {
		st := cloneMap(state)
		st["item"], st["item_index"] = it, float64(i)
		options[i] = renderText(n.Describe, st)
		id := "i" + strconv.Itoa(i)
		ids = append(ids, id)
		fmt.Fprintf(&list, "\n- %s: %s", id, options[i])
	}
	if n.AllowNone {
		ids = append(ids, "none")
		list.WriteString("\n- none: none of them")
	}
	enc, _ := json.Marshal(ids)
	ans, err := r.ask(ctx, key, Question{Node: n.Label, Kind: "pick", Instructions: n.Instructions + "\n\nThe options:" + list.String(),
		State: view, Schema: json.RawMessage(`{"type": "string", "enum": ` + string(enc) + `}`)})
	if err != nil {
		return nil, err
	}
	var id string
	_ = json.Unmarshal(ans.Value, &id)
	rec := map[string]any{"index": nil, "item": nil, "none": true, "option": nil, "confidence": ans.Confidence}
	switch i, err := strconv.Atoi(strings.TrimPrefix(id, "i")); {
	case id == "none" && n.AllowNone:
	case strings.HasPrefix(id, "i") && err == nil && i >= 0 && i < len(items):
		rec["index"], rec["item"], rec["none"], rec["option"] = float64(i), items[i], false, options[i]
	default:
		return nil, r.fail(n, key, FailOutput, "the answer %s is not one of the options (%s)", ans.Value, strings.Join(ids, ", "))
	}
	next := cloneMap(state)
	next[n.As] = rec
	return next, nil
}

func (r *runner) hasBranch(n *Node, s string) bool {
	for _, b := range n.Routes {
		if b.Name == s {
			return true
		}
	}
	return false
}

// agent runs an agent, report or (markdown) artifact node on the agent's loop.
func (r *runner) agent(ctx context.Context, n *Node, key string, state map[string]any) (map[string]any, error) {
	view, err := r.view(n, key, state)
	if err != nil {
		return nil, err
	}
	instr := n.Instructions
	var sch json.RawMessage
	switch n.Kind {
	case "report", "artifact":
		if instr == "" {
			instr = "Write the final report of this work as Markdown."
		}
		instr += "\n\nAnswer with the report itself, in Markdown (at least 40 characters)."
	default:
		if n.Out != "" {
			sch = r.schema(n.Out)
			instr += "\n\nAnswer with one JSON value that matches this JSON Schema, and nothing else:\n" + string(sch)
		}
	}
	if n.Kind == "agent" {
		k := n.As
		if k == "" {
			k = n.Label
		}
		decode := func(dk, text string) (any, error) {
			var v any = text
			if sch != nil {
				if err := json.Unmarshal([]byte(stripFence(text)), &v); err != nil {
					return nil, r.fail(n, dk, FailOutput, "the agent's answer is not JSON: %v", err)
				}
			}
			return v, nil
		}
		// One drive is one run of the agent's loop on the sub-task; with verify, the host may
		// have each answer reviewed in the same conversation (Task.Review).
		drive := func(ctx context.Context, dk, feedback string, review reviewFunc) (any, error) {
			t := Task{Node: n.Label, Instructions: instr + feedback, State: view, Schema: sch, Tools: n.Tools}
			if review != nil {
				bad := 0
				t.Review = func(ctx context.Context, text string) (bool, string, error) {
					v, err := decode(dk, text)
					if err == nil && n.Out != "" {
						if cerr := r.w.schemas.check(n.Out, v); cerr != nil {
							err = r.fail(n, dk, FailOutput, "the value does not match schema %q: %v", n.Out, cerr)
						}
					}
					if err != nil {
						// Not reviewable: the answer itself is wrong; say so in the conversation, as
						// many times as the drives allow.
						if bad++; bad >= verifyDrives(n.Verify) {
							return false, "", err
						}
						return false, fmt.Sprintf("Your answer was not accepted: %v. Answer again with one JSON value that matches the schema.", err), nil
					}
					return review(ctx, v)
				}
			}
			text, err := r.h.Agent(ctx, dk, t)
			if err != nil {
				return nil, err
			}
			return decode(dk, text)
		}
		return r.drives(ctx, n, key, k, state, drive)
	}
	text, err := r.h.Agent(ctx, key, Task{Node: n.Label, Instructions: instr, State: view, Schema: sch, Tools: n.Tools})
	if err != nil {
		return nil, err
	}
	{
		if len(strings.TrimSpace(text)) < 40 {
			return nil, r.fail(n, key, FailOutput, "the report is %d characters; a report has at least 40", len(strings.TrimSpace(text)))
		}
		next := cloneMap(state)
		next["report_markdown"] = text
		return next, nil
	}
}

// stripFence takes the JSON out of a ```json fence, as models often write it.
func stripFence(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "```") {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
		s = strings.TrimSuffix(strings.TrimSpace(s), "```")
	}
	return strings.TrimSpace(s)
}

// mapNode runs the body once per item, at most maxConcurrency at a time; the results are in the
// items' order whatever order they finish in.
func (r *runner) mapNode(ctx context.Context, n *Node, key string, state map[string]any) (map[string]any, error) {
	v, _ := lookupOK(state, n.ItemsPath)
	items, ok := v.([]any)
	if !ok {
		return nil, r.fail(n, key, FailPath, "itemsPath %q holds %T, not a list", n.ItemsPath, v)
	}
	workers := n.MaxConc
	if workers <= 0 {
		workers = defaultMapWorkers
	}
	results := make([]any, len(items))
	errs := make([]error, len(items))
	// The first failure stops the items not yet started; items already running finish their
	// effects (cancelling them would leave a recorded intent without its result, which a replay
	// must take for an interrupted call).
	var stop atomic.Bool
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	for i, item := range items {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil || stop.Load() {
			break
		}
		r.spawn(&wg, func() {
			defer func() { <-sem }()
			in := cloneMap(state)
			in["item"], in["item_index"] = item, float64(i)
			out, err := r.node(ctx, n.Body, fmt.Sprintf("%s[%d]", key, i), in)
			if err == nil && n.ResultPath != "" {
				rv, ok := lookupOK(out, n.ResultPath)
				if !ok {
					err = r.fail(n, key, FailPath, "item %d: resultPath %q is not in its state", i, n.ResultPath)
				}
				results[i] = rv
			} else if err == nil {
				results[i] = writes(in, out)
			}
			if err != nil {
				errs[i] = err
				stop.Store(true)
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The lowest item's failure is the run's (an escalation only when no item failed), so a
	// replay reports the same one.
	for _, err := range errs {
		var esc *escalated
		if err != nil && !errors.As(err, &esc) {
			return nil, err
		}
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	next := cloneMap(state)
	next[n.As] = results
	return next, nil
}

// writes is what a map item's body wrote: the keys of out that differ from in, without item.
func writes(in, out map[string]any) map[string]any {
	w := map[string]any{}
	for k, v := range out {
		if k == "item" || k == "item_index" {
			continue
		}
		if old, ok := in[k]; ok && jsonEqual(old, v) {
			continue
		}
		w[k] = v
	}
	return w
}

func (r *runner) loop(ctx context.Context, n *Node, key string, state map[string]any) (map[string]any, error) {
	for i := 0; i < n.MaxIters; i++ {
		var err error
		if state, err = r.node(ctx, n.Body, fmt.Sprintf("%s#%d", key, i), state); err != nil {
			return nil, err
		}
		ok, err := r.holdsAt(ctx, n, fmt.Sprintf("%s#%d/$until", key, i), n.Until, state)
		if err != nil {
			return nil, err
		}
		if ok {
			return state, nil
		}
	}
	// At the bound the state passes through with until unmet (the published semantics).
	return state, nil
}

// holdsAt evaluates n's predicate p; an ask predicate is one yes/no question as step key, which
// holds when the probability of yes is at least gte (default 0.6).
func (r *runner) holdsAt(ctx context.Context, n *Node, key string, p *Predicate, state map[string]any) (bool, error) {
	if p == nil || p.Predicate != "ask" {
		ok, err := r.holds(p, state)
		if err != nil {
			return false, r.fail(n, key, FailPath, "%v", err)
		}
		return ok, nil
	}
	view := withoutReserved(state).(map[string]any)
	if p.State != nil {
		v, err := interpolate(p.State, state)
		if err != nil {
			return false, r.fail(n, key, FailPath, "state: %v", err)
		}
		view = v.(map[string]any)
	}
	instr := p.Instructions
	if p.Criteria != nil {
		instr += fmt.Sprintf("\n\nAnswer true when: %s\nAnswer false when: %s", p.Criteria.True, p.Criteria.False)
	}
	ans, err := r.ask(ctx, key, Question{Node: n.Label, Kind: "ask", Instructions: instr, State: view, Schema: json.RawMessage(`{"type": "boolean"}`)})
	if err != nil {
		return false, err
	}
	var yes bool
	if err := json.Unmarshal(ans.Value, &yes); err != nil {
		return false, r.fail(n, key, FailOutput, "the answer %s is not true or false", ans.Value)
	}
	// The confidence is the answer's: the probability of yes is it, or its complement.
	pYes := ans.Confidence
	if !yes {
		pYes = 1 - ans.Confidence
	}
	gte := p.Gte
	if gte == 0 {
		gte = 0.6
	}
	return pYes >= gte, nil
}

// holds evaluates a mechanical predicate on state.
func (r *runner) holds(p *Predicate, state map[string]any) (bool, error) {
	if p == nil {
		return false, nil
	}
	v, ok := lookupOK(state, p.Path)
	num := func() (float64, bool) {
		switch x := v.(type) {
		case float64:
			return x, true
		case []any:
			return float64(len(x)), true
		}
		return 0, false
	}
	switch p.Predicate {
	case "field_equals":
		return ok && jsonEqual(v, p.Value), nil
	case "field_true":
		return v == true, nil
	case "in":
		for _, x := range p.Values {
			if ok && jsonEqual(v, x) {
				return true, nil
			}
		}
		return false, nil
	case "count_gte", "gte":
		f, isNum := num()
		return isNum && f >= p.N, nil
	case "lt":
		f, isNum := num()
		return isNum && f < p.N, nil
	case "empty":
		return !ok || empty(v), nil
	case "no_new_items":
		// The list at key has no items beyond what its previous value held: the engine keeps no
		// history, so a list that is absent or empty has no new items.
		x, _ := lookupOK(state, p.Key)
		return empty(x), nil
	}
	return false, fmt.Errorf("predicate %q does not run here", p.Predicate)
}

func jsonEqual(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// lookupOK resolves a dot path in state: a record by key, an array by a canonical in-bounds index
// (the published resolver, Lean finding F9 fixed); anything else is not there (nil, false).
func lookupOK(state map[string]any, path string) (any, bool) {
	var cur any = state
	for _, seg := range strings.Split(path, ".") {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[seg]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, ok := canonicalIndex(seg)
			if !ok || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// interpolate replaces {path} placeholders in v's strings; a whole-string placeholder keeps the
// value's type, a missing path is an error.
func interpolate(v any, state map[string]any) (any, error) {
	switch x := v.(type) {
	case string:
		if m := placeholder.FindStringSubmatchIndex(x); m != nil && m[0] == 0 && m[1] == len(x) {
			val, ok := lookupOK(state, x[m[2]:m[3]])
			if !ok {
				return nil, fmt.Errorf("{%s} is not in state", x[m[2]:m[3]])
			}
			return val, nil
		}
		var err error
		out := placeholder.ReplaceAllStringFunc(x, func(s string) string {
			val, ok := lookupOK(state, s[1:len(s)-1])
			if !ok {
				err = fmt.Errorf("%s is not in state", s)
				return s
			}
			return textOf(val)
		})
		return out, err
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			iv, err := interpolate(e, state)
			if err != nil {
				return nil, err
			}
			out[k] = iv
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			iv, err := interpolate(e, state)
			if err != nil {
				return nil, err
			}
			out[i] = iv
		}
		return out, nil
	}
	return v, nil
}

// renderText interpolates a text-rendering field: a missing path becomes "(path unset)".
func renderText(s string, state map[string]any) string {
	return placeholder.ReplaceAllStringFunc(s, func(m string) string {
		val, ok := lookupOK(state, m[1:len(m)-1])
		if !ok {
			return "(" + m[1:len(m)-1] + " unset)"
		}
		return textOf(val)
	})
}

func textOf(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func anyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// withoutReserved drops the engine's $ keys from an object (they never reach output or a prompt).
func withoutReserved(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(m))
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !strings.Contains(k, "$") {
			out[k] = m[k]
		}
	}
	return out
}
