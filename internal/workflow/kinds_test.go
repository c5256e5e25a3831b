package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// The Host methods the kinds of kinds.go need, on the tests' recording host: Clock is durable
// (a key answers its first reading again, as the journal does), Sleep really waits, Stat answers
// from files.
var recClocks sync.Map // *recHost -> map[string]time.Time

func (h *recHost) Clock(ctx context.Context, key, title string) (time.Time, error) {
	h.enter(key)
	defer h.leave()
	m, _ := recClocks.LoadOrStore(h, &sync.Map{})
	t, _ := m.(*sync.Map).LoadOrStore(key, time.Now())
	return t.(time.Time), nil
}

func (h *recHost) Sleep(ctx context.Context, key string, until time.Time, what string) error {
	t := time.NewTimer(time.Until(until))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (h *recHost) Stat(ctx context.Context, rel string) (int64, error) {
	if rel == "out/report.csv" {
		return 12, nil
	}
	return 0, os.ErrNotExist
}

// kindHost answers by key: tool results and questions scripted per key prefix, and it journals
// like a run does: an effect whose key it has seen answers its recorded result without running
// again (so running the same document twice is a replay).
type kindHost struct {
	*recHost
	mu       sync.Mutex
	tool     func(key string, n int, args map[string]any) ToolResult
	ask      func(key string, q Question) json.RawMessage
	agent    func(key string, t Task) string
	recorded map[string]any
	effects  []string // keys that ran (not replayed)
	tasks    []Task
}

func newKindHost() *kindHost { return &kindHost{recHost: &recHost{}, recorded: map[string]any{}} }

func (h *kindHost) once(key string, run func() any) any {
	h.mu.Lock()
	if v, ok := h.recorded[key]; ok {
		h.mu.Unlock()
		return v
	}
	h.mu.Unlock()
	v := run()
	h.mu.Lock()
	h.recorded[key] = v
	h.effects = append(h.effects, key)
	h.mu.Unlock()
	return v
}

func (h *kindHost) Tool(ctx context.Context, key, tool string, args map[string]any) (ToolResult, error) {
	return h.once(key, func() any { return h.tool(key, len(h.effects), args) }).(ToolResult), nil
}

func (h *kindHost) Ask(ctx context.Context, key string, q Question) (Answer, error) {
	return h.once(key, func() any {
		h.mu.Lock()
		h.asked = append(h.asked, q)
		h.mu.Unlock()
		return Answer{Value: h.ask(key, q), Confidence: 0.9}
	}).(Answer), nil
}

func (h *kindHost) Agent(ctx context.Context, key string, t Task) (string, error) {
	return h.once(key, func() any {
		h.mu.Lock()
		h.tasks = append(h.tasks, t)
		h.mu.Unlock()
		return h.agent(key, t)
	}).(string), nil
}

// TestEngineSift: one request asks every item's questions (ids i.ID, each described for its
// item); values and answers hold every item, items only those keep passes, in order; keep reads a
// yes/no's probability, a score's level or a confidence; too many questions split into parts,
// asked at once.
func TestEngineSift(t *testing.T) {
	doc := func(keep string) string {
		return `{"v": 2, "name": "s", "schemas": {"In": {"type": "object", "properties": {"results": {"type": "array"}, "subject": {"type": "string"}}},
  "Rel": {"type": "object", "required": ["relevant", "useful"], "properties": {
    "relevant": {"type": "boolean", "description": "Does this result concern the subject?"},
    "useful": {"type": "integer", "description": "How much would reading it add?", "criteria": ["nothing", "some", "decisive"], "minimum": 0, "maximum": 2}}},
  "Out": {"type": "object"}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "Out", "path": "ranked"},
  "root": {"node": "chain", "steps": [{"node": "sift", "label": "rank", "itemsPath": "results", "describe": "{item.title} ({item.url})",
    "state": {"subject": "{subject}"}, "out": "Rel", "as": "ranked"` + keep + `}]}}`
	}
	in := map[string]any{"subject": "X", "results": []any{
		map[string]any{"url": "a", "title": "guide"}, map[string]any{"url": "b", "title": "recipe"}, map[string]any{"url": "c", "title": "profile"}}}
	// Item 1 is not relevant (yes at 0.1); usefulness is the item's index; confidences 0.95, 0.55, 0.8.
	answer := func(key string, q Question) json.RawMessage {
		conf := []float64{0.95, 0.55, 0.8}
		m := map[string]any{}
		for i := 0; i < 3; i++ {
			rel, c := true, conf[i]
			if i == 1 {
				rel, c = false, 0.9
			}
			m[fmt.Sprintf("%d.relevant", i)] = map[string]any{"answer": rel, "confidence": c}
			m[fmt.Sprintf("%d.useful", i)] = map[string]any{"answer": i, "confidence": conf[i]}
		}
		b, _ := json.Marshal(m)
		return b
	}
	for keep, want := range map[string]string{
		`, "keep": {"path": "relevant"}`:                         "a,c [0 2]",
		`, "keep": {"path": "useful", "gte": 2}`:                 "c [2]",
		`, "keep": {"path": "relevant.confidence", "gte": 0.85}`: "a [0]", // 2|p-0.5|: 0.9, 0.8, 0.6
		`, "keep": {"path": "useful.confidence", "gte": 0.8}`:    "a,c [0 2]",
		``: "a,b,c [0 1 2]",
	} {
		h := newKindHost()
		h.ask = answer
		r, err := mustValid(t, doc(keep)).Run(context.Background(), h, in)
		if err != nil {
			t.Fatalf("keep %s: %v", keep, err)
		}
		var out struct {
			Items []struct{ URL string } `json:"items"`
			Kept  []int                  `json:"kept"`
			Vals  []map[string]any       `json:"values"`
			Ans   []map[string]any       `json:"answers"`
		}
		if err := json.Unmarshal(r.Output, &out); err != nil {
			t.Fatal(err)
		}
		var urls []string
		for _, it := range out.Items {
			urls = append(urls, it.URL)
		}
		if got := fmt.Sprintf("%s %v", strings.Join(urls, ","), out.Kept); got != want {
			t.Errorf("keep %s: kept %s, want %s", keep, got, want)
		}
		if len(out.Vals) != 3 || out.Vals[1]["relevant"] != false || out.Vals[2]["useful"] != 2.0 || len(out.Ans) != 3 {
			t.Errorf("values %v answers %v", out.Vals, out.Ans)
		}
		if len(h.asked) != 1 || strings.Join(h.effects, " ") != "wf/rank" {
			t.Fatalf("one request for three items, keyed wf/rank: %v", h.effects)
		}
		q := h.asked[0]
		items, _ := q.State["items"].([]any)
		if len(items) != 3 || q.State["subject"] != "X" || items[1].(map[string]any)["summary"] != "recipe (b)" || items[2].(map[string]any)["id"] != "item_2" {
			t.Errorf("the state asked: %v", q.State)
		}
		if !strings.Contains(string(q.Schema), `"2.useful"`) || !strings.Contains(string(q.Schema), "For `items[2]` (id item_2): How much") {
			t.Errorf("schema %s", q.Schema)
		}
	}

	// A score outside its levels (0 to 2 here) is not an answer.
	h := newKindHost()
	h.ask = func(key string, q Question) json.RawMessage {
		return json.RawMessage(`{"0.relevant": {"answer": true, "confidence": 1}, "0.useful": {"answer": 5, "confidence": 1}}`)
	}
	one := map[string]any{"subject": "X", "results": []any{map[string]any{"url": "a", "title": "t"}}}
	if _, err := mustValid(t, doc("")).Run(context.Background(), h, one); !isFailure(err, FailOutput) || !strings.Contains(err.Error(), "levels 0 to 2") {
		t.Errorf("a score of 5: %v", err)
	}

	// 300 items of one question: 256 in the first request, 44 in the second, ids global.
	many := `{"v": 2, "name": "s", "schemas": {"In": {"type": "object", "properties": {"xs": {"type": "array"}}},
  "Q": {"type": "object", "properties": {"ok": {"type": "boolean", "description": "ok?"}}}, "Out": {"type": "object"}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "Out", "path": "r"},
  "root": {"node": "sift", "label": "all", "itemsPath": "xs", "out": "Q", "as": "r", "keep": {"path": "ok"}}}`
	xs := make([]any, 300)
	for i := range xs {
		xs[i] = float64(i)
	}
	h = newKindHost()
	h.ask = func(key string, q Question) json.RawMessage {
		items := q.State["items"].([]any)
		m := map[string]any{}
		for j, it := range items {
			// Keep the items whose value is a multiple of 100.
			v := it.(map[string]any)["item"].(float64)
			m[fmt.Sprintf("%d.ok", j)] = map[string]any{"answer": int(v)%100 == 0, "confidence": 1}
		}
		b, _ := json.Marshal(m)
		return b
	}
	r, err := mustValid(t, many).Run(context.Background(), h, map[string]any{"xs": xs})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(h.effects)
	sizes := map[string]int{}
	for _, q := range h.asked {
		items := q.State["items"].([]any)
		sizes[items[0].(map[string]any)["id"].(string)] = len(items)
	}
	if strings.Join(h.effects, " ") != "wf/all/part#0 wf/all/part#1" || sizes["item_0"] != 256 || sizes["item_256"] != 44 {
		t.Errorf("parts %v: %v", h.effects, sizes)
	}
	if !strings.Contains(string(r.Output), `"items":[0,100,200]`) {
		t.Errorf("output %s", r.Output)
	}
}

// TestEnginePoll: the issue and each poll are distinct steps (KEY, KEY/$poll#i), waits are
// durable clock readings; a replay of a half-done poll (the same journal) issues nothing again
// and continues the polls; fail_when fails at once; the deadline bounds the loop.
func TestEnginePoll(t *testing.T) {
	const head = `{"v": 2, "name": "p", "schemas": {"Job": {"type": "object", "required": ["ok"]}, "Out": {"type": "object"}},
  "output": {"schemaId": "Out", "path": "job"},
  "root": {"node": "chain", "steps": [{"node": "call", "label": "job", "via": "tool", "tool": "jobs", "args": {}, "out": "Job", "as": "job", "deadline_s": %s,
    "poll": {"until": {"predicate": "field_equals", "path": "data.state", "value": "done"}, "fail_when": {"predicate": "field_equals", "path": "data.state", "value": "failed"}, "interval_s": 0.1, "deadline_s": %s}}]}}`
	status := func(states ...string) func(string, int, map[string]any) ToolResult {
		return func(key string, n int, args map[string]any) ToolResult {
			s := states[len(states)-1]
			if n < len(states) {
				s = states[n]
			}
			return ToolResult{Content: fmt.Sprintf(`{"state": %q}`, s)}
		}
	}
	w := mustValid(t, fmt.Sprintf(head, "5", "10"))
	h := newKindHost()
	h.tool = status("queued", "running", "done")
	r, err := w.Run(context.Background(), h, nil)
	if err != nil || !strings.Contains(string(r.Output), `"state":"done"`) {
		t.Fatalf("%s %v", r.Output, err)
	}
	if got := strings.Join(h.effects, " "); got != "wf/job wf/job/$poll#1 wf/job/$poll#2" {
		t.Errorf("effects %s", got)
	}
	if got := strings.Join(h.recHost.keys, " "); got != "wf/job/$poll wf/job/$poll#1/wait wf/job/$poll#2/wait" {
		t.Errorf("clock readings %s", got)
	}

	// A replay from a journal that holds the issue and the first wait: the issue is not made
	// again; the wait's recorded time is reused; the polls continue.
	h2 := newKindHost()
	h2.tool = status("running", "done")
	h2.recorded["wf/job"] = ToolResult{Content: `{"state": "queued"}`}
	h2.recHost = h.recHost // the same durable clock readings
	if _, err := w.Run(context.Background(), h2, nil); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(h2.effects, " "); got != "wf/job/$poll#1 wf/job/$poll#2" {
		t.Errorf("after a restart the effects are %s: the issue must not run again", got)
	}

	h = newKindHost()
	h.tool = status("queued", "failed")
	if _, err := w.Run(context.Background(), h, nil); !isFailure(err, FailEffect) || !strings.Contains(err.Error(), "fail_when after 2 checks") {
		t.Errorf("fail_when: %v", err)
	}
	short := mustValid(t, fmt.Sprintf(head, "0.2", "0.75"))
	h = newKindHost()
	h.tool = status("running")
	// Waits of 0.1 s: the bound is the poll's deadline_s, 0.75 s from the first issue.
	_, err = short.Run(context.Background(), h, nil)
	if !isFailure(err, FailTimeout) || !strings.Contains(err.Error(), "poll.deadline_s (0.75s)") || len(h.effects) < 2 {
		t.Errorf("deadline: %v after %d polls", err, len(h.effects))
	}
}

// TestEngineExecutor: the body sees input and calls tools, each call a step KEY/tool#N; it may
// await; a tool's error is thrown in the body; what it returns is checked against out; the
// body's own failure is code_failed; a replay answers the tool calls from the journal.
func TestEngineExecutor(t *testing.T) {
	doc := func(body string) string {
		b, _ := json.Marshal(body)
		return `{"v": 2, "name": "e", "schemas": {"In": {"type": "object", "properties": {"who": {"type": "string"}}}, "R": {"type": "object", "required": ["n"]}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "R", "path": "res"},
  "root": {"node": "call", "label": "ex", "via": "executor", "code": ` + string(b) + `, "input": {"who": "{who}"}, "out": "R", "as": "res", "deadline_s": 5}}`
	}
	h := newKindHost()
	h.tool = func(key string, n int, args map[string]any) ToolResult {
		if args["label"] == "bad" {
			return ToolResult{Content: "no such thing", IsError: true}
		}
		return ToolResult{Content: fmt.Sprintf(`{"got": %q}`, args["label"])}
	}
	w := mustValid(t, doc(`const a = await tools.dev_count({label: "a-" + input.who});
const b = tools.dev_count({label: "b"});
let caught = "";
try { tools.dev_count({label: "bad"}); } catch (e) { caught = String(e); }
return { n: 2, a: a.data.got, b: b.content, caught };`))
	r, err := w.Run(context.Background(), h, map[string]any{"who": "me"})
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	_ = json.Unmarshal(r.Output, &out)
	if out["a"] != "a-me" || out["b"] != `{"got": "b"}` || out["caught"] != "Error: dev_count answered an error: no such thing" {
		t.Errorf("output %v", out)
	}
	if got := strings.Join(h.effects, " "); got != "wf/ex/tool#0 wf/ex/tool#1 wf/ex/tool#2" {
		t.Errorf("tool calls %s", got)
	}
	before := len(h.effects)
	if _, err := w.Run(context.Background(), h, map[string]any{"who": "me"}); err != nil || len(h.effects) != before {
		t.Errorf("a replay ran %v again (%v)", h.effects[before:], err)
	}
	for body, want := range map[string]string{
		`return { m: 1 };`:            FailOutput,
		`throw new Error("broken");`:  FailCode,    // validation wants a return: this one has it below
		`while (true) {} ; return {}`: FailTimeout, // deadline_s 0.2 s comes first
	} {
		if !strings.Contains(body, "return") {
			body += " return {};"
		}
		w := mustValid(t, strings.Replace(doc(body), `"deadline_s": 5`, `"deadline_s": 0.2`, 1))
		_, err := w.Run(context.Background(), newKindHost(), map[string]any{"who": "x"})
		if !isFailure(err, want) {
			t.Errorf("%s: %v, want %s", body, err, want)
		}
	}
	// The body's own time is bounded as a code node's, whatever deadline_s allows.
	w = mustValid(t, strings.Replace(doc(`let i = 0; while (true) { i++ } return { n: i };`), `"deadline_s": 5`, `"deadline_s": 60`, 1))
	if _, err := w.Run(context.Background(), newKindHost(), map[string]any{"who": "x"}); !isFailure(err, FailCode) || !strings.Contains(err.Error(), "time limit") {
		t.Errorf("an endless body with deadline_s 60: %v", err)
	}
	// A host error (a journal write, a park) is not the body's to catch: it ends the call as it is.
	hostErr := errors.New("the store is gone")
	eh := &errHost{kindHost: newKindHost(), err: hostErr}
	w = mustValid(t, doc(`try { tools.t({}); } catch (e) {} return { n: 1 };`))
	if _, err := w.Run(context.Background(), eh, map[string]any{"who": "x"}); !errors.Is(err, hostErr) {
		t.Errorf("host error: %v", err)
	}
	for body, want := range map[string]string{`tools.t({});`: "must return", `return require("fs")`: "not require", `return {`: "not a JavaScript"} {
		_, errs := Validate([]byte(doc(body)), Options{Runnable: true})
		if len(errs) == 0 || errs[0].Code != CodeCodeInvalid || errs[0].Pointer != "/root/code" || !strings.Contains(errs[0].Message, want) {
			t.Errorf("%s: %v", body, errs)
		}
	}
}

type errHost struct {
	*kindHost
	err error
}

func (h *errHost) Tool(ctx context.Context, key, tool string, args map[string]any) (ToolResult, error) {
	return ToolResult{}, h.err
}

// TestEngineVerify: an agent's submission is reviewed (KEY/$verify#D); a rejected one goes back
// for another drive (KEY/drive#D) told its answer and the reasons; the reviews are at as$verify;
// when the drives are spent the node fails verification_failed naming what was unmet.
func TestEngineVerify(t *testing.T) {
	w := mustValid(t, `{"v": 2, "name": "v", "schemas": {"In": {"type": "object"}, "Notes": {"type": "object", "required": ["summary"]},
  "Check": {"type": "object", "properties": {"summary": {"type": "boolean", "description": "Is the summary supported by the sources?"},
    "cites": {"type": "boolean", "description": "Does it cite a source?"}}}, "Out": {"type": "object"}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "Out"},
  "root": {"node": "chain", "steps": [{"node": "agent", "label": "research", "instructions": "Research it", "out": "Notes", "as": "notes",
    "verify": {"out": "Check", "state": {"draft": "{notes}"}, "maxDrives": 3}}]}}`)
	run := func(accept int) (*kindHost, *Result, error) {
		h := newKindHost()
		h.agent = func(key string, task Task) string { return fmt.Sprintf(`{"summary": "draft %d"}`, len(h.tasks)) }
		h.ask = func(key string, q Question) json.RawMessage {
			ok := strings.HasSuffix(key, fmt.Sprintf("#%d", accept))
			return json.RawMessage(fmt.Sprintf(`{"summary": {"answer": true, "confidence": 0.9}, "cites": {"answer": %t, "confidence": 0.9}}`, ok))
		}
		r, err := w.Run(context.Background(), h, map[string]any{})
		return h, r, err
	}
	h, r, err := run(2)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(h.effects, " "); got != "wf/research wf/research/$verify#1 wf/research/drive#2 wf/research/$verify#2" {
		t.Errorf("steps %s", got)
	}
	if len(h.tasks) != 2 || !strings.Contains(h.tasks[1].Instructions, `{"summary":"draft 1"}`) || !strings.Contains(h.tasks[1].Instructions, "Still required: cites: Does it cite a source?") {
		t.Errorf("the second drive's instructions: %q", h.tasks[1].Instructions)
	}
	if d := h.asked[0].State["draft"]; fmt.Sprint(d) != "map[summary:draft 1]" || h.asked[0].State["submission"] == nil {
		t.Errorf("the reviewer saw %v", h.asked[0].State)
	}
	var out map[string]any
	_ = json.Unmarshal(r.Output, &out)
	if fmt.Sprint(out["notes"]) != "map[summary:draft 2]" || out["notes$verify"] != nil {
		t.Errorf("output %v (the $verify record stays out of the output)", out)
	}
	rec, _ := r.State["notes$verify"].(map[string]any)
	drives, _ := rec["drives"].([]any)
	if len(drives) != 2 || fmt.Sprint(drives[0].(map[string]any)["unmet"]) != "[cites]" || drives[1].(map[string]any)["accepted"] != true {
		t.Errorf("notes$verify %v", rec)
	}
	if _, _, err := run(9); !isFailure(err, FailVerify) || !strings.Contains(err.Error(), "all 3 drives") || !strings.Contains(err.Error(), "unmet cites") {
		t.Errorf("exhausted: %v", err)
	}
}

// TestEngineFileArtifact: a shell call's produces are checked after it; an artifact of a file
// type is that file, recorded at artifact; a file that is not there fails effect_produces_missing.
func TestEngineFileArtifact(t *testing.T) {
	doc := func(produces string) string {
		return `{"v": 2, "name": "a", "schemas": {"Out": {"type": "object", "required": ["artifact"]}}, "output": {"schemaId": "Out"},
  "root": {"node": "chain", "steps": [{"node": "call", "label": "make", "via": "shell", "command": "mkdir -p out && echo a,b > out/report.csv", "produces": ["` + produces + `"], "as": "made", "deadline_s": 5},
    {"node": "artifact", "label": "deliver", "type": "csv", "path": "` + produces + `"}]}}`
	}
	r, err := mustValid(t, doc("out/report.csv")).Run(context.Background(), &recHost{}, nil)
	if err != nil || !strings.Contains(string(r.Output), `"artifact":{"bytes":12,"filename":"report.csv","path":"out/report.csv","type":"csv"}`) {
		t.Errorf("%s %v", r.Output, err)
	}
	if _, err := mustValid(t, doc("out/other.csv")).Run(context.Background(), &recHost{}, nil); !isFailure(err, FailProduces) || !strings.Contains(err.Error(), "out/other.csv") {
		t.Errorf("missing file: %v", err)
	}
}

// TestPlanKinds: the dry run counts a polled call at its most runs (the issue and one per
// interval within poll.deadline_s), a verified agent at maxDrives drives and reviews, a sift's
// calls apart (their answers grow with the items), and executor bodies apart (their tool calls
// are known only when they run).
func TestPlanKinds(t *testing.T) {
	w := mustValid(t, `{"v": 2, "name": "p", "schemas": {"In": {"type": "object", "properties": {"xs": {"type": "array"}}}, "A": {"type": "object"},
  "Q": {"type": "object", "properties": {"ok": {"type": "boolean", "description": "ok?"}}}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "A"},
  "root": {"node": "chain", "steps": [
    {"node": "call", "label": "job", "via": "tool", "tool": "t", "args": {}, "out": "A", "as": "j", "deadline_s": 5,
     "poll": {"until": {"predicate": "field_true", "path": "data.done"}, "interval_s": 2, "deadline_s": 10}},
    {"node": "sift", "label": "s", "itemsPath": "xs", "out": "Q", "as": "s"},
    {"node": "call", "label": "ex", "via": "executor", "code": "return {};", "out": "A", "as": "e", "deadline_s": 5},
    {"node": "agent", "label": "a", "instructions": "Do", "out": "A", "as": "n", "verify": {"out": "Q", "maxDrives": 3}}]}}`)
	p := w.MakePlan(map[string]any{"xs": []any{1.0}})
	if p.ToolCalls != 6 || p.SiftCalls != 1 || p.ExecutorCalls != 1 || p.AgentSteps != 3 || p.Questions != 4 {
		t.Errorf("plan %+v: want 6 tool calls (the issue and 5 polls), 1 sift call, 1 executor body, 3 agent drives, 4 questions (the sift and 3 reviews)", p)
	}
}

// sessionHost continues the same conversation when Task.Review rejects an answer, as the built-in
// loop does: one Agent call, its answers reviewed in turn.
type sessionHost struct {
	*kindHost
	feedback []string
	// text is the agent's answer at a turn (default {"summary": "draft N"}).
	text func(turn int) string
}

func (h *sessionHost) Agent(ctx context.Context, key string, t Task) (string, error) {
	h.enter(key)
	defer h.leave()
	for turn := 1; ; turn++ {
		text := fmt.Sprintf(`{"summary": "draft %d"}`, turn)
		if h.text != nil {
			text = h.text(turn)
		}
		ok, fb, err := t.Review(ctx, text)
		if err != nil || ok {
			return text, err
		}
		h.feedback = append(h.feedback, fb)
	}
}

// TestEngineVerifySession: a host that reviews in the same conversation gets the reviewer's
// reasons as feedback; its accepted answer is not reviewed again, and no second drive is started.
func TestEngineVerifySession(t *testing.T) {
	w := mustValid(t, `{"v": 2, "name": "v", "schemas": {"In": {"type": "object"}, "Notes": {"type": "object", "required": ["summary"]},
  "Check": {"type": "object", "properties": {"cites": {"type": "boolean", "description": "Does it cite a source?"}}}, "Out": {"type": "object"}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "Out"},
  "root": {"node": "agent", "label": "research", "instructions": "Research it", "out": "Notes", "as": "notes", "verify": {"out": "Check"}}}`)
	h := &sessionHost{kindHost: newKindHost()}
	h.ask = func(key string, q Question) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"cites": {"answer": %t, "confidence": 0.9}}`, strings.HasSuffix(key, "#2")))
	}
	r, err := w.Run(context.Background(), h, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(h.effects, " "); got != "wf/research/$verify#1 wf/research/$verify#2" {
		t.Errorf("reviews %s: two reviews in one drive", got)
	}
	if strings.Join(h.recHost.keys, " ") != "wf/research" || len(h.feedback) != 1 || !strings.Contains(h.feedback[0], "Still required: cites") {
		t.Errorf("drives %v, feedback %q", h.recHost.keys, h.feedback)
	}
	if !strings.Contains(string(r.Output), `"summary":"draft 2"`) {
		t.Errorf("output %s", r.Output)
	}
	// Rejected every time: the second review ends the node.
	h = &sessionHost{kindHost: newKindHost()}
	h.ask = func(key string, q Question) json.RawMessage {
		return json.RawMessage(`{"cites": {"answer": false, "confidence": 0.9}}`)
	}
	if _, err := w.Run(context.Background(), h, map[string]any{}); !isFailure(err, FailVerify) || len(h.feedback) != 1 {
		t.Errorf("exhausted: %v after %d rejections", err, len(h.feedback))
	}
	// An answer that is not the schema's is sent back too, as many times as the drives allow, then
	// fails the node: a model that never answers right does not loop until the cap.
	h = &sessionHost{kindHost: newKindHost(), text: func(int) string { return "I think it is fine." }}
	h.ask = func(key string, q Question) json.RawMessage {
		return json.RawMessage(`{"cites": {"answer": true, "confidence": 0.9}}`)
	}
	if _, err := w.Run(context.Background(), h, map[string]any{}); !isFailure(err, FailOutput) || len(h.feedback) != 1 || len(h.effects) != 0 {
		t.Errorf("never JSON: %v after %d sent back, reviews %v", err, len(h.feedback), h.effects)
	}
}

// TestTreeKinds: a polled call's polls are the node's own (its value the last poll's; its steps
// count every run and reading), its clock readings and an executor's tool calls its step
// children; a sift's parts and a verify's reviews are its node's steps.
func TestTreeKinds(t *testing.T) {
	w := mustValid(t, `{"v": 2, "name": "t", "schemas": {"In": {"type": "object", "properties": {"xs": {"type": "array"}}}, "A": {"type": "object"},
  "Q": {"type": "object", "properties": {"ok": {"type": "boolean", "description": "ok?"}}}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "A"},
  "root": {"node": "chain", "steps": [
    {"node": "call", "label": "job", "via": "tool", "tool": "t", "args": {}, "out": "A", "as": "j", "deadline_s": 5,
     "poll": {"until": {"predicate": "field_true", "path": "data.done"}, "interval_s": 1, "deadline_s": 10}},
    {"node": "sift", "label": "s", "itemsPath": "xs", "out": "Q", "as": "s"}]}}`)
	tool := func(key, content string) TreeStep {
		return TreeStep{Key: key, Kind: "tool", State: "Completed", Result: json.RawMessage(`{"Content": "` + content + `", "IsError": false}`)}
	}
	clock := func(key string) TreeStep {
		return TreeStep{Key: key, Kind: "clock", State: "Completed", Result: json.RawMessage(`{"at": "2026-12-01T12:00:00Z"}`)}
	}
	steps := []TreeStep{clock("wf/job/$poll"), tool("wf/job", "queued"), clock("wf/job/$poll#1/wait"), tool("wf/job/$poll#1", "done"),
		{Key: "wf/s/part#0", Kind: "model", State: "Completed"}, {Key: "wf/s/part#1", Kind: "model", State: "Started"}}
	tr := w.Tree(steps, TreeRun{})
	job := find(tr, "wf/job")
	if job == nil || job.Steps != 4 || !strings.Contains(job.Value, "done") || len(job.Children) != 2 || job.Children[0].Key != "wf/job/$poll" || job.Children[1].Key != "wf/job/$poll#1/wait" {
		t.Errorf("polled call node %+v", job)
	}
	s := find(tr, "wf/s")
	if s == nil || len(s.Children) != 2 || s.Children[1].Key != "wf/s/part#1" {
		t.Errorf("sift node %+v", s)
	}
	// A run that failed at a poll (its failure keyed KEY/$poll#1) shows the call node failed.
	tr = w.Tree(steps[:4], TreeRun{Finished: true, FailedKey: "wf/job/$poll#1"})
	if job := find(tr, "wf/job"); job == nil || job.State != NodeFailed {
		t.Errorf("failed poll: %+v", job)
	}
}

// TestEngineVerifyDecide: a decide node's verify asks the question again (KEY/drive#2), its
// instructions carrying the previous answer and the reasons; a doubted field (a yes/no named after
// it, below override.below) is a reason too.
func TestEngineVerifyDecide(t *testing.T) {
	w := mustValid(t, `{"v": 2, "name": "v", "schemas": {"In": {"type": "object"}, "V": {"type": "object", "required": ["urgent"], "properties": {"urgent": {"type": "boolean"}}},
  "Check": {"type": "object", "properties": {"urgent": {"type": "boolean", "description": "Does the ticket show it is urgent?"}}}, "Out": {"type": "object"}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "Out"},
  "root": {"node": "decide", "label": "triage", "instructions": "Triage", "out": "V", "as": "v", "verify": {"out": "Check", "override": {"below": 0.4}}}}`)
	h := newKindHost()
	h.ask = func(key string, q Question) json.RawMessage {
		switch key {
		case "wf/triage":
			return json.RawMessage(`{"urgent": true}`)
		case "wf/triage/drive#2":
			return json.RawMessage(`{"urgent": false}`)
		}
		// The reviewer doubts urgent: yes at 0.35 (below 0.4) the first time; a false urgent is not filled.
		return json.RawMessage(`{"urgent": {"answer": false, "confidence": 0.65}}`)
	}
	r, err := w.Run(context.Background(), h, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(h.effects, " "); got != "wf/triage wf/triage/$verify#1 wf/triage/drive#2 wf/triage/$verify#2" {
		t.Errorf("steps %s", got)
	}
	if !strings.Contains(h.asked[2].Instructions, `{"urgent":true}`) || !strings.Contains(h.asked[2].Instructions, "Not supported by your evidence") {
		t.Errorf("the second question's instructions: %q", h.asked[2].Instructions)
	}
	if !strings.Contains(string(r.Output), `"v":{"urgent":false}`) {
		t.Errorf("output %s", r.Output)
	}
}
