package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"
)

// This file runs the kinds that build on the others: sift (one question set over many items),
// polled calls, calls via executor, an agent, decide or extract node's verify, and artifacts that
// name a file of the run folder.

// MaxQuestionsPerRequest is how many questions one structured model call carries at most (the
// published default). A sift whose items times questions exceed it is asked in several requests
// of whole items, each its own step (KEY/part#N), SiftPartsAtOnce at a time (the published
// engine's bound); one that fits is one step.
const (
	MaxQuestionsPerRequest = 256
	SiftPartsAtOnce        = 4
)

// AnswerTokens bounds the answer of a call asking n questions, each answered with its confidence.
func AnswerTokens(n int) int { return 256 + 48*n }

// question is one property of a flat question schema.
type question struct {
	id     string
	kind   string // boolean, choice, score
	schema map[string]any
	desc   string
}

// questionsOf reads a question schema's properties, sorted by id (validation checked its shape).
func (r *runner) questionsOf(id string) ([]question, error) {
	var s struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(r.w.Schemas[id], &s); err != nil {
		return nil, fmt.Errorf("question schema %q: %w", id, err)
	}
	out := make([]question, 0, len(s.Properties))
	for qid, q := range s.Properties {
		kind := "score"
		switch q["type"] {
		case "boolean":
			kind = "boolean"
		case "string":
			kind = "choice"
		}
		desc, _ := q["description"].(string)
		out = append(out, question{id: qid, kind: kind, schema: q, desc: desc})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out, nil
}

// answered is one question's answer with its confidence: for a yes/no, pYes is the probability
// of yes and confidence is 2×|pYes−0.5| (the published derivation); for a choice or a score the
// model's confidence in it.
type answered struct {
	value      any
	pYes       float64
	confidence float64
}

// askEach asks the questions ids (qs describes each) in one structured model call, each answered
// with its own confidence: {"ID": {"answer": ..., "confidence": 0..1}, ...}.
func (r *runner) askEach(ctx context.Context, n *Node, key, kind, instr string, view map[string]any, ids []string, qs map[string]question) (map[string]answered, error) {
	props := make(map[string]any, len(ids))
	for _, id := range ids {
		q := qs[id]
		sch := make(map[string]any, len(q.schema))
		for k, v := range q.schema {
			if k != "criteria" {
				sch[k] = v
			}
		}
		props[id] = map[string]any{"type": "object", "additionalProperties": false, "required": []string{"answer", "confidence"},
			"description": q.desc,
			"properties": map[string]any{"answer": sch, "confidence": map[string]any{"type": "number", "minimum": 0, "maximum": 1,
				"description": "how sure you are of this answer, 0 to 1"}}}
		if c, ok := q.schema["criteria"].([]any); ok {
			var b strings.Builder
			for lvl, d := range c {
				fmt.Fprintf(&b, " %d: %v;", lvl, d)
			}
			props[id].(map[string]any)["description"] = q.desc + " (levels:" + strings.TrimSuffix(b.String(), ";") + ")"
		}
	}
	schema, err := json.Marshal(map[string]any{"type": "object", "additionalProperties": false, "required": ids, "properties": props})
	if err != nil {
		return nil, fmt.Errorf("encode %s question schema: %w", key, err)
	}
	ans, err := r.ask(ctx, key, Question{Node: n.Label, Kind: kind, Instructions: instr, State: view, Schema: schema, MaxTokens: AnswerTokens(len(ids))})
	if err != nil {
		return nil, err
	}
	var got map[string]struct {
		Answer     any      `json:"answer"`
		Confidence *float64 `json:"confidence"`
	}
	if err := json.Unmarshal(ans.Value, &got); err != nil {
		return nil, r.fail(n, key, FailOutput, "the answer is not an object of the questions' answers: %v", err)
	}
	out := make(map[string]answered, len(ids))
	for _, id := range ids {
		a, ok := got[id]
		if !ok || a.Confidence == nil || *a.Confidence < 0 || *a.Confidence > 1 {
			return nil, r.fail(n, key, FailOutput, "no answer with a confidence between 0 and 1 for question %q", id)
		}
		c := *a.Confidence
		res := answered{value: a.Answer, confidence: c}
		if qs[id].kind == "boolean" {
			yes, isBool := a.Answer.(bool)
			if !isBool {
				return nil, r.fail(n, key, FailOutput, "question %q is yes/no; the answer %v is not true or false", id, a.Answer)
			}
			res.pYes = c
			if !yes {
				res.pYes = round6(1 - c)
			}
			res.confidence = round6(2 * math.Abs(res.pYes-0.5))
			// Decoded as published: yes at a probability of yes of 0.5 or more.
			res.value = res.pYes >= 0.5
		}
		if levels, ok := qs[id].schema["criteria"].([]any); ok && qs[id].kind == "score" {
			f, isNum := a.Answer.(float64)
			if !isNum || f != math.Trunc(f) || f < 0 || int(f) >= len(levels) {
				return nil, r.fail(n, key, FailOutput, "question %q is a score of levels 0 to %d; the answer %v is not one", id, len(levels)-1, a.Answer)
			}
		}
		out[id] = res
	}
	return out, nil
}

// round6 keeps a probability derived from the model's to 6 places (1 − 0.8 is 0.2, not
// 0.19999999999999996), as what a person reads and a predicate compares.
func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// sidecar is one question set's raw answers and confidences, as <as>$answers and a sift's
// answers hold them.
func sidecar(qs []question, got map[string]answered, prefix string) map[string]any {
	ans, conf := map[string]any{}, map[string]any{}
	for _, q := range qs {
		a := got[prefix+q.id]
		if q.kind == "boolean" {
			ans[q.id] = map[string]any{"noul": a.pYes}
		} else {
			ans[q.id] = map[string]any{"answer": a.value}
		}
		conf[q.id] = a.confidence
	}
	return map[string]any{"answers": ans, "confidence": conf}
}

// sift asks the same questions of every item at itemsPath in one request: item i's questions are
// "i.ID", described "For `items[i]` (id item_i): QUESTION", and the state the model sees holds
// items [{id, summary?, item}]. Its value is {items, kept, values, answers}: every item's answers
// (values[i] the decoded object, answers[i] the raw answers and confidences), and at items the
// items keep passes, in their order.
func (r *runner) sift(ctx context.Context, n *Node, key string, state map[string]any) (map[string]any, error) {
	v, _ := lookupOK(state, n.ItemsPath)
	items, ok := v.([]any)
	if !ok {
		return nil, r.fail(n, key, FailPath, "itemsPath %q holds %T, not a list", n.ItemsPath, v)
	}
	qs, err := r.questionsOf(n.Out)
	if err != nil {
		return nil, err
	}
	base := map[string]any{}
	if n.State != nil {
		if base, err = r.view(n, key, state); err != nil {
			return nil, err
		}
	}
	values, sidecars := make([]any, len(items)), make([]any, len(items))
	kept, keptItems := []any{}, []any{}
	per := max(1, MaxQuestionsPerRequest/max(1, len(qs)))
	type part struct {
		lo, hi int
		key    string
		view   map[string]any
		ids    []string
		byID   map[string]question
		got    map[string]answered
		err    error
	}
	var parts []*part
	for lo := 0; lo < len(items); lo += per {
		pt := &part{lo: lo, hi: min(len(items), lo+per), key: key, byID: map[string]question{}}
		named := make([]any, 0, pt.hi-lo)
		for i := lo; i < pt.hi; i++ {
			j := i - lo
			e := map[string]any{"id": fmt.Sprintf("item_%d", i), "item": items[i]}
			if n.Describe != "" {
				st := cloneMap(state)
				st["item"], st["item_index"] = items[i], float64(i)
				e["summary"] = strings.Join(strings.Fields(renderText(n.Describe, st)), " ")
			}
			named = append(named, e)
			for _, q := range qs {
				id := fmt.Sprintf("%d.%s", j, q.id)
				q.desc = fmt.Sprintf("For `items[%d]` (id item_%d): %s", j, i, q.desc)
				pt.ids, pt.byID[id] = append(pt.ids, id), q
			}
		}
		pt.view = cloneMap(base)
		pt.view["items"] = named
		parts = append(parts, pt)
	}
	if len(parts) > 1 {
		for c, pt := range parts {
			pt.key = fmt.Sprintf("%s/part#%d", key, c)
		}
	}
	// The parts are asked at most SiftPartsAtOnce at a time; after a failure no part starts, the
	// ones asked finish, and the first part's failure in order is the node's.
	sem := make(chan struct{}, SiftPartsAtOnce)
	var wg sync.WaitGroup
	var stop atomic.Bool
	for _, pt := range parts {
		sem <- struct{}{}
		if stop.Load() || ctx.Err() != nil {
			<-sem
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			pt.got, pt.err = r.askEach(ctx, n, pt.key, "sift", "Answer every question of the schema from the state: each property's description is its question, about one item of items.", pt.view, pt.ids, pt.byID)
			if pt.err != nil {
				stop.Store(true)
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, pt := range parts {
		if pt.err != nil {
			return nil, pt.err
		}
		if pt.got == nil {
			return nil, r.fail(n, pt.key, FailEffect, "not asked: an earlier part failed")
		}
		for i := pt.lo; i < pt.hi; i++ {
			prefix := fmt.Sprintf("%d.", i-pt.lo)
			val := map[string]any{}
			for _, q := range qs {
				val[q.id] = pt.got[prefix+q.id].value
			}
			if err := r.w.schemas.check(n.Out, val); err != nil {
				return nil, r.fail(n, pt.key, FailOutput, "the answers for item %d do not match schema %q: %v", i, n.Out, err)
			}
			values[i], sidecars[i] = val, sidecar(qs, pt.got, prefix)
			if n.Keep == nil || passes(n.Keep, pt.got, prefix, qs) {
				kept, keptItems = append(kept, float64(i)), append(keptItems, items[i])
			}
		}
	}
	next := cloneMap(state)
	next[n.As] = map[string]any{"items": keptItems, "kept": kept, "values": values, "answers": sidecars}
	return next, nil
}

// passes is keep: a yes/no question keeps on its probability of yes (at least gte, default 0.5),
// a score on its level (at least gte, default 0), ID.confidence on the answer's confidence.
func passes(k *Keep, got map[string]answered, prefix string, qs []question) bool {
	id, tail, _ := strings.Cut(k.Path, ".")
	a, ok := got[prefix+id]
	if !ok {
		return false
	}
	var measure, gte float64
	switch {
	case tail == "confidence":
		measure = a.confidence
	case a.value == true || a.value == false:
		measure, gte = a.pYes, 0.5
	default:
		f, isNum := a.value.(float64)
		if !isNum {
			return false
		}
		measure = f
	}
	if k.Gte != nil {
		gte = *k.Gte
	}
	return measure >= gte
}

// polled issues the call, then polls it (the same call again) until poll.until holds on its own
// result, poll.fail_when fails it, or the next poll would come after poll.deadline_s from the
// first issue: the engine always bounds the loop (the published engine does not when its host
// recovers runs, Lean finding F8). The issue is step KEY and poll i is KEY/$poll#i, so a
// restarted run replays the ones done and never issues the call again; the time of the first
// issue and of each wait are durable clock readings (KEY/$poll, KEY/$poll#i/wait), so a restart
// waits only for what is left of a wait.
func (r *runner) polled(ctx context.Context, n *Node, key string, state map[string]any) (any, error) {
	p := n.Poll
	tm, ok := r.h.(Timers)
	if !ok {
		return nil, r.fail(n, key, FailNotRunnable, "this host keeps no durable time, so it runs no polled calls")
	}
	start, err := tm.Clock(ctx, key+"/$poll", fmt.Sprintf("poll %q every %gs for at most %gs", n.Label, p.IntervalS, p.DeadlineS))
	if err != nil {
		return nil, err
	}
	end := start.Add(seconds(p.DeadlineS))
	interval := seconds(p.IntervalS)
	for i := 0; ; i++ {
		ck := key
		if i > 0 {
			ck = fmt.Sprintf("%s/$poll#%d", key, i)
		}
		v, err := r.call(ctx, n, ck, state)
		if err != nil {
			return nil, err
		}
		if n.Out != "" {
			if err := r.w.schemas.check(n.Out, v); err != nil {
				return nil, r.fail(n, ck, FailOutput, "the value does not match schema %q: %v", n.Out, err)
			}
		}
		res, _ := v.(map[string]any)
		if p.FailWhen != nil {
			if hit, err := r.holds(p.FailWhen, res); err != nil {
				return nil, r.fail(n, ck, FailPath, "poll.fail_when: %v", err)
			} else if hit {
				return nil, r.fail(n, ck, FailEffect, "poll met fail_when after %d checks: %s", i+1, firstLine(textOf(v)))
			}
		}
		if done, err := r.holds(p.Until, res); err != nil {
			return nil, r.fail(n, ck, FailPath, "poll.until: %v", err)
		} else if done {
			return v, nil
		}
		wk := fmt.Sprintf("%s/$poll#%d/wait", key, i+1)
		at, err := tm.Clock(ctx, wk, fmt.Sprintf("wait %gs before poll %d of %q", p.IntervalS, i+1, n.Label))
		if err != nil {
			return nil, err
		}
		next := at.Add(interval)
		if next.After(end) {
			return nil, r.fail(n, ck, FailTimeout, "poll.until did not hold within poll.deadline_s (%gs) after %d checks; the last result: %s", p.DeadlineS, i+1, firstLine(textOf(v)))
		}
		if err := tm.Sleep(ctx, wk, next, fmt.Sprintf("poll %d of %q at %s (every %gs; poll.deadline_s ends at %s)",
			i+1, n.Label, next.UTC().Format("15:04:05.000"), p.IntervalS, end.UTC().Format("15:04:05"))); err != nil {
			return nil, err
		}
	}
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// produced checks, after a shell call, that each file it declares in produces is in the run
// folder (effect_produces_missing otherwise).
func (r *runner) produced(ctx context.Context, n *Node, key string, state map[string]any) error {
	if len(n.Produces) == 0 {
		return nil
	}
	fs, ok := r.h.(Files)
	if !ok {
		return r.fail(n, key, FailNotRunnable, "this host cannot see the run folder, so it cannot check produces")
	}
	for _, p := range n.Produces {
		rel := renderText(p, state)
		if _, err := fs.Stat(ctx, rel); err != nil {
			return r.fail(n, key, FailProduces, "the command declares it produces %q, which is not in the run folder after it: %v", rel, err)
		}
	}
	return nil
}

// fileArtifact is an artifact of a type other than markdown or report: the file at path, which an
// earlier shell call produced in the run folder, is the run's deliverable; its value at
// "artifact" is {path, filename, type, bytes}.
func (r *runner) fileArtifact(ctx context.Context, n *Node, key string, state map[string]any) (map[string]any, error) {
	fs, ok := r.h.(Files)
	if !ok {
		return nil, r.fail(n, key, FailNotRunnable, "this host cannot see the run folder, so it delivers no file artifacts")
	}
	size, err := fs.Stat(ctx, n.Path)
	if err != nil {
		return nil, r.fail(n, key, FailProduces, "the artifact's file %q is not in the run folder: %v", n.Path, err)
	}
	next := cloneMap(state)
	next["artifact"] = map[string]any{"path": n.Path, "filename": path.Base(n.Path), "type": n.Type, "bytes": float64(size)}
	return next, nil
}

// reviewFunc reviews one answer (the decoded value): accepted, or the feedback to give with it.
type reviewFunc func(ctx context.Context, v any) (accepted bool, feedback string, err error)

// drives runs a generative node's drive and writes its value at k. With verify, each answer is
// reviewed by the verify question set (one review is one drive, step KEY/$verify#D): a host
// that can (the built-in loop) has the agent answer again in the same conversation, told the
// reasons (Task.Review); an answer the host returns unreviewed is reviewed here, and a rejected
// one goes back for another drive of the node (step KEY/drive#D, told its previous answer and the
// reasons; a decide or extract node is one question, so its drives are always these). Up to
// maxDrives (default 2); the reviews are at k$verify: {drives: [{drive, doubted, unmet, accepted,
// answers}], answers}. When the drives are spent the node fails verification_failed naming the
// reasons: a rejected answer is never accepted silently.
func (r *runner) drives(ctx context.Context, n *Node, key, k string, state map[string]any, drive func(ctx context.Context, dk, feedback string, review reviewFunc) (any, error)) (map[string]any, error) {
	if n.Verify == nil {
		v, err := drive(ctx, key, "", nil)
		if err != nil {
			return nil, err
		}
		return r.write(n, key, state, k, v)
	}
	vr, err := r.newVerifier(n, key, k, state)
	if err != nil {
		return nil, err
	}
	feedback := ""
	for {
		dk := key
		if len(vr.record) > 0 {
			dk = fmt.Sprintf("%s/drive#%d", key, len(vr.record)+1)
		}
		v, err := drive(ctx, dk, feedback, vr.review)
		if err != nil {
			return nil, err
		}
		if n.Out != "" {
			if err := r.w.schemas.check(n.Out, v); err != nil {
				return nil, r.fail(n, dk, FailOutput, "the value does not match schema %q: %v", n.Out, err)
			}
		}
		b, _ := json.Marshal(v)
		ok := vr.accepted != "" && vr.accepted == string(b)
		if !ok {
			// The host returned an answer no review accepted (it ignored Review): review it here.
			var fb string
			if ok, fb, err = vr.review(ctx, v); err != nil {
				return nil, err
			}
			feedback = "\n\n" + fb
		}
		if ok {
			next, err := r.write(n, dk, state, k, v)
			if err != nil {
				return nil, err
			}
			next[k+"$verify"] = map[string]any{"drives": vr.record, "answers": vr.last["answers"]}
			return next, nil
		}
	}
}

// verifier reviews a node's answers by its verify question set, one review per drive (see
// drives), and keeps what the reviews found.
type verifier struct {
	r         *runner
	n         *Node
	vf        *Verify
	key, k    string
	state     map[string]any
	qs        []question
	ids       []string
	byID      map[string]question
	maxDrives int
	below     float64 // a filled field whose yes is below this is doubted

	record   []any          // each review: {drive, doubted, unmet, accepted, answers}
	accepted string         // the JSON of the answer the last review accepted
	last     map[string]any // the last review's answers
}

func (r *runner) newVerifier(n *Node, key, k string, state map[string]any) (*verifier, error) {
	vf := n.Verify
	qs, err := r.questionsOf(vf.Out)
	if err != nil {
		return nil, err
	}
	vr := &verifier{r: r, n: n, vf: vf, key: key, k: k, state: state, qs: qs, byID: map[string]question{}, ids: make([]string, 0, len(qs)),
		maxDrives: vf.MaxDrives, below: 0.3}
	for _, q := range qs {
		vr.ids, vr.byID[q.id] = append(vr.ids, q.id), q
	}
	if vr.maxDrives <= 0 {
		vr.maxDrives = 2
	}
	if vf.Override != nil {
		vr.below = vf.Override.Below
	}
	return vr, nil
}

// review is one review of answer v (a reviewFunc): accepted, or the feedback for another drive;
// an error once the drives are spent.
func (vr *verifier) review(ctx context.Context, v any) (bool, string, error) {
	r, n := vr.r, vr.n
	d := len(vr.record) + 1
	vk := fmt.Sprintf("%s/$verify#%d", vr.key, d)
	if d > vr.maxDrives {
		return false, "", r.fail(n, vk, FailVerify, "the reviewer rejected all %d drives (verify.maxDrives)", vr.maxDrives)
	}
	sub, _ := v.(map[string]any)
	if sub == nil {
		sub = map[string]any{}
	}
	st := cloneMap(vr.state)
	st["submission"], st[vr.k] = sub, sub
	view := map[string]any{}
	if vr.vf.State != nil {
		iv, err := interpolate(vr.vf.State, st)
		if err != nil {
			return false, "", r.fail(n, vk, FailPath, "verify.state: %v", err)
		}
		view = iv.(map[string]any)
	}
	view["submission"] = sub
	got, err := r.askEach(ctx, n, vk, "verify", "Review the submission: answer each question of the schema (each property's description is its question) from the state.", view, vr.ids, vr.byID)
	if err != nil {
		return false, "", err
	}
	var doubted, unmet []string
	for _, q := range vr.qs {
		if q.kind != "boolean" {
			continue
		}
		a := got[q.id]
		if fv, named := sub[q.id]; named {
			if filled(fv) && a.pYes < vr.below {
				doubted = append(doubted, q.id)
			}
		} else if a.pYes < 0.5 {
			unmet = append(unmet, q.id)
		}
	}
	ok := len(doubted) == 0 && len(unmet) == 0
	vr.last = sidecar(vr.qs, got, "")
	vr.record = append(vr.record, map[string]any{"drive": float64(d), "doubted": anyList(doubted), "unmet": anyList(unmet), "accepted": ok, "answers": vr.last})
	if ok {
		b, _ := json.Marshal(v)
		vr.accepted = string(b)
		return true, "", nil
	}
	if d >= vr.maxDrives {
		return false, "", r.fail(n, vk, FailVerify, "the reviewer rejected all %d drives (verify.maxDrives); the last: unmet %s, doubted %s", vr.maxDrives, orDash(unmet), orDash(doubted))
	}
	return false, vr.feedback(d, v, doubted, unmet), nil
}

// feedback tells the agent why review d did not accept its answer v.
func (vr *verifier) feedback(d int, v any, doubted, unmet []string) string {
	line := func(ids []string) string {
		parts := make([]string, len(ids))
		for i, id := range ids {
			parts[i] = id + ": " + strings.Join(strings.Fields(vr.byID[id].desc), " ")
		}
		return strings.Join(parts, " | ")
	}
	prev, _ := json.Marshal(v)
	var b strings.Builder
	fmt.Fprintf(&b, "A reviewer did not accept your answer (drive %d of at most %d):\n%s\n", d, vr.maxDrives, prev)
	if len(doubted) > 0 {
		b.WriteString("Not supported by your evidence (remove it, or show what supports it): " + line(doubted) + ".\n")
	}
	if len(unmet) > 0 {
		b.WriteString("Still required: " + line(unmet) + ".\n")
	}
	b.WriteString("Answer again.")
	return b.String()
}

var placeholderValue = regexp.MustCompile(`(?i)^(none|null|nil|n/a|na|unknown|not published|not stated|not available|not found|not applicable|-)$`)

// filled is a submission field with a value a reviewer can doubt (the published rule).
func filled(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return strings.TrimSpace(x) != "" && !placeholderValue.MatchString(strings.TrimSpace(x))
	case []any:
		return len(x) > 0
	}
	return true
}

func anyList(s []string) []any {
	out := make([]any, len(s))
	for i, x := range s {
		out[i] = x
	}
	return out
}

func orDash(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// A call via executor runs its code body in goja, as a code node does (the same interpreter, no
// I/O, no clock, no randomness), with two names bound: input, the call's interpolated input, and
// tools, through which the body calls the agent's tools: tools.NAME(args) is one tool call, the
// same tool step a call via tool makes (the agent's tools, approvals and journal), keyed
// KEY/tool#N for the body's Nth call, so a replay answers the ones done from the journal. It
// answers {ok, content, data?} and throws when the tool answers an error. The body may await
// (it runs as an async function; tool calls complete at once). What it returns is the result.
// Its own running time, tool calls apart, is bounded as a code node's (CodeTimeout).
func executorSource(body string) string { return "(async (input, tools) => {\n" + body + "\n})" }

var executorBanned = regexp.MustCompile(`\b(require|process|fetch|eval|Function|import)\b`)

// CheckExecutorBody reports why body is not a call's executor body, or nil.
func CheckExecutorBody(body string) error {
	if len(body) > codeMaxSource {
		return fmt.Errorf("the body is over %d KiB", codeMaxSource>>10)
	}
	if !regexp.MustCompile(`\breturn\b`).MatchString(body) {
		return errors.New("the executor body must return its JSON result")
	}
	if m := executorBanned.FindString(body); m != "" {
		return fmt.Errorf("the executor body may use only tools and input, not %s", m)
	}
	if _, err := parser.ParseFile(nil, "", executorSource(body), 0); err != nil {
		return fmt.Errorf("not a JavaScript function body: %v", err)
	}
	return nil
}

func (r *runner) executor(ctx context.Context, n *Node, key string, state map[string]any) (any, error) {
	in, err := interpolate(anyOrEmpty(n.Input), state)
	if err != nil {
		return nil, r.fail(n, key, FailPath, "input: %v", err)
	}
	calls := 0
	res, err := RunExecutor(ctx, n.Code, in, func(tool string, args any) (any, error) {
		k := fmt.Sprintf("%s/tool#%d", key, calls)
		calls++
		am, _ := args.(map[string]any)
		if am == nil {
			am = map[string]any{}
		}
		tr, err := r.h.Tool(ctx, k, tool, am)
		if err != nil {
			return nil, err
		}
		if tr.IsError {
			return nil, &toolError{fmt.Sprintf("%s answered an error: %s", tool, firstLine(tr.Content))}
		}
		v := map[string]any{"ok": true, "content": tr.Content}
		var data any
		if json.Unmarshal([]byte(tr.Content), &data) == nil {
			v["data"] = data
		}
		return v, nil
	})
	if err != nil {
		var ce *codeError
		if errors.As(err, &ce) {
			code := FailCode
			if errors.Is(ce.err, ErrCodeMemory) {
				code = FailCodeMemory
			}
			return nil, r.fail(n, key, code, "%v", ce.err)
		}
		return nil, err
	}
	var v any
	if err := json.Unmarshal(res, &v); err != nil {
		return nil, r.fail(n, key, FailCode, "decode result: %v", err)
	}
	return v, nil
}

func anyOrEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// toolError is a tool's error answer, thrown in the body (it may catch it).
type toolError struct{ msg string }

func (e *toolError) Error() string { return e.msg }

// codeError is the body's own failure (it threw, returned nothing JSON holds, ran out of time),
// as opposed to the host's (a journal write, a park), which ends the run as the host says.
type codeError struct{ err error }

func (e *codeError) Error() string { return e.err.Error() }

// runExecutorHere runs an executor body with input and a tools proxy whose calls go to call, in
// this process: the code child's work (RunExecutor). A host error from call stops the body and is
// returned as it is; the body cannot catch it.
func runExecutorHere(ctx context.Context, body string, input any, call func(tool string, args any) (any, error)) (json.RawMessage, error) {
	vm, str, err := sandbox()
	if err != nil {
		return nil, err
	}
	var hostErr error
	stop := context.AfterFunc(ctx, func() { vm.Interrupt("the call's deadline_s passed") })
	defer stop()
	// The body's own running time is bounded as a code node's is (CodeTimeout, so also what it can
	// allocate); the time its tool calls take is not counted, deadline_s bounds the whole.
	budget := CodeTimeout
	var started time.Time
	var timer *time.Timer
	arm := func() {
		started = time.Now()
		timer = time.AfterFunc(max(budget, 0), func() { vm.Interrupt("time limit") })
	}
	pause := func() {
		if timer.Stop() {
			budget -= time.Since(started)
		}
	}
	arm()
	defer func() { timer.Stop() }()
	toolFn := func(name string) func(goja.FunctionCall) goja.Value {
		return func(fc goja.FunctionCall) goja.Value {
			if hostErr != nil {
				panic(vm.NewGoError(hostErr))
			}
			var args any
			if a := fc.Argument(0); !goja.IsUndefined(a) && !goja.IsNull(a) {
				raw, err := json.Marshal(a.Export())
				if err == nil {
					err = json.Unmarshal(raw, &args)
				}
				if err != nil {
					panic(vm.NewTypeError("tools.%s: the arguments are not JSON: %v", name, err))
				}
			}
			pause()
			v, err := call(name, args)
			arm()
			var te *toolError
			switch {
			case errors.As(err, &te):
				// A JavaScript Error the body may catch: "Error: dev_count answered an error: ...".
				ev, cerr := vm.New(vm.Get("Error"), vm.ToValue(te.msg))
				if cerr != nil {
					panic(vm.NewGoError(te))
				}
				panic(ev)
			case err != nil:
				hostErr = err
				vm.Interrupt(err)
				panic(vm.NewGoError(err))
			}
			raw, _ := json.Marshal(v)
			out, jerr := vm.RunString("(" + string(raw) + ")")
			if jerr != nil {
				panic(vm.NewGoError(jerr))
			}
			return out
		}
	}
	proxyGet := vm.ToValue(func(fc goja.FunctionCall) goja.Value {
		name := fc.Argument(1).String()
		if name == "then" {
			// tools is not a thenable: awaiting it gives tools.
			return goja.Undefined()
		}
		return vm.ToValue(toolFn(name))
	})
	mk, err := vm.RunString(`(function (get) { return new Proxy({}, { get: get }); })`)
	if err != nil {
		return nil, fmt.Errorf("executor sandbox: %w", err)
	}
	mkf, _ := goja.AssertFunction(mk)
	tools, err := mkf(goja.Undefined(), proxyGet)
	if err != nil {
		return nil, fmt.Errorf("executor sandbox: %w", err)
	}
	raw, err := json.Marshal(input)
	if err != nil {
		return nil, fmt.Errorf("executor input: %w", err)
	}
	in, err := vm.RunString("(" + string(raw) + ")")
	if err != nil {
		return nil, fmt.Errorf("executor input: %w", err)
	}
	fnv, err := vm.RunString(executorSource(body))
	if err != nil {
		return nil, &codeError{codeErr(err)}
	}
	fn, _ := goja.AssertFunction(fnv)
	pv, err := fn(goja.Undefined(), in, tools)
	if hostErr != nil {
		return nil, hostErr
	}
	if err != nil {
		return nil, &codeError{codeErr(err)}
	}
	p, ok := pv.Export().(*goja.Promise)
	if !ok {
		return nil, &codeError{errors.New("the body did not run as an async function")}
	}
	switch p.State() {
	case goja.PromiseStateRejected:
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &codeError{fmt.Errorf("the body threw: %s", strings.TrimSpace(p.Result().String()))}
	case goja.PromiseStatePending:
		return nil, &codeError{errors.New("the body awaited something that never settles (only tool calls and values can be awaited)")}
	}
	s, err := stringify(vm, str, p.Result())
	if err != nil {
		return nil, &codeError{err}
	}
	return s, nil
}
