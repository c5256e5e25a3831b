package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/model/fake"
)

// WorkflowResult is the workflow scenario's figures: a built-in tool step against a workflow
// node doing the same tool call, and a map of many items.
type WorkflowResult struct {
	// Steps is the tool calls of the built-in run (one model turn asks for all) and the call
	// nodes of the workflow's chain.
	Steps int `json:"steps"`
	// BuiltinMs is the built-in run's exec time (startedAt → finishedAt: two model calls and the
	// tool calls); BuiltinPerStepMs is that over Steps.
	BuiltinMs        float64 `json:"builtinMs"`
	BuiltinPerStepMs float64 `json:"builtinPerStepMs"`
	// WorkflowMs is the workflow run's exec time (no model call); WorkflowPerNodeMs that over Steps.
	WorkflowMs        float64 `json:"workflowMs"`
	WorkflowPerNodeMs float64 `json:"workflowPerNodeMs"`
	// The map: MapItems tool calls at most MapConcurrency at a time, its exec time, journal steps
	// per second, and the server's peak resident memory after it (VmHWM).
	MapItems       int     `json:"mapItems"`
	MapConcurrency int     `json:"mapConcurrency"`
	MapMs          float64 `json:"mapMs"`
	MapStepsPerSec float64 `json:"mapStepsPerSec"`
	ServerPeakRSSK int64   `json:"serverPeakRssKB"`
	// ServerRSSBeforeK is the server's resident memory before the map (VmRSS), ServerRSSAfterK after.
	ServerRSSBeforeK int64 `json:"serverRssBeforeKB"`
	ServerRSSAfterK  int64 `json:"serverRssAfterKB"`
	// The question map: QuestionItems judge questions, each answered after QuestionLatencyMs by the
	// scripted model server, MapConcurrency at a time: its exec time and model steps per second
	// (one at a time it cannot be under QuestionItems × the latency).
	QuestionItems     int     `json:"questionItems"`
	QuestionLatencyMs float64 `json:"questionLatencyMs"`
	QuestionMapMs     float64 `json:"questionMapMs"`
	QuestionStepsPerS float64 `json:"questionStepsPerSec"`
	// The same QuestionItems items asked as one sift: one structured model call (answered after
	// QuestionLatencyMs with every item's answer), its exec time and the model calls it made.
	SiftMs         float64 `json:"siftMs"`
	SiftModelCalls int     `json:"siftModelCalls"`
}

const (
	questionItems   = 200
	questionLatency = 50 * time.Millisecond
)

const workflowSteps = 50

func workflowScript() *fake.Script {
	calls := make([]fake.ToolCall, workflowSteps)
	for i := range calls {
		calls[i] = fake.ToolCall{Name: "ls", Input: json.RawMessage(`{"path":"."}`)}
	}
	// The sift's one answer holds every item's (ids i.ok).
	sift := map[string]any{}
	for i := 0; i < questionItems; i++ {
		sift[fmt.Sprintf("%d.ok", i)] = map[string]any{"answer": i%2 == 0, "confidence": 0.9}
	}
	siftAnswer, _ := json.Marshal(map[string]any{"answer": sift, "confidence": 0.9})
	return &fake.Script{Entries: []fake.Entry{
		{Name: "sift", Match: "BENCH-SIFT", Turns: []fake.Turn{{Text: string(siftAnswer), Latency: fake.Duration(questionLatency)}}},
		{Name: "question", Match: "BENCH-QUESTION", Turns: []fake.Turn{{Text: `{"answer": {"ok": true}, "confidence": 0.9}`, Latency: fake.Duration(questionLatency)}}},
		{Name: "builtin", Match: "*", Turns: []fake.Turn{{ToolCalls: calls}, {Text: "done"}}}}}
}

// questionWorkflow is a map of one judge question per item, conc at a time.
func questionWorkflow(conc int) string {
	return fmt.Sprintf(`{"v": 2, "name": "bench-q", "schemas": {"In": {"type": "object"}, "Out": {"type": "object"},
    "Q": {"type": "object", "properties": {"ok": {"type": "boolean", "description": "Is the item fine?"}}, "required": ["ok"]}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "Out"}, "root": {"node": "chain", "steps": [{"node": "map", "label": "each", "itemsPath": "items", "as": "all", "maxConcurrency": %d,
    "body": {"node": "judge", "label": "q", "state": {"item": "{item}", "about": "BENCH-QUESTION"}, "out": "Q", "as": "a"}}]}}`, conc)
}

// siftWorkflow asks the question of questionWorkflow of every item in one sift.
func siftWorkflow() string {
	return `{"v": 2, "name": "bench-sift", "schemas": {"In": {"type": "object"}, "Out": {"type": "object"},
    "Q": {"type": "object", "properties": {"ok": {"type": "boolean", "description": "Is the item fine?"}}, "required": ["ok"]}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "Out"}, "root": {"node": "chain", "steps": [
    {"node": "sift", "label": "all", "itemsPath": "items", "state": {"about": "BENCH-SIFT"}, "out": "Q", "as": "s", "keep": {"path": "ok"}}]}}`
}

// lsWorkflow is a chain of n call nodes of ls, or with mapped, one map of ls over the input's items.
func lsWorkflow(n int, mapped bool, conc int) string {
	call := `{"node": "call", "label": "%s", "via": "tool", "tool": "ls", "args": {"path": "."}, "out": "R", "as": "%s", "deadline_s": 60}`
	var root string
	if mapped {
		root = fmt.Sprintf(`{"node": "chain", "steps": [{"node": "map", "label": "each", "itemsPath": "items", "as": "all", "maxConcurrency": %d, "body": %s}]}`,
			conc, fmt.Sprintf(call, "ls", "r"))
	} else {
		steps := make([]string, n)
		for i := range steps {
			steps[i] = fmt.Sprintf(call, fmt.Sprintf("ls%d", i), fmt.Sprintf("r%d", i))
		}
		root = `{"node": "chain", "steps": [` + strings.Join(steps, ",") + `]}`
	}
	return `{"v": 2, "name": "bench", "schemas": {"In": {"type": "object"}, "R": {"type": "object"}, "Out": {"type": "object"}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "Out"}, "root": ` + root + `}`
}

func runWorkflowBench(c config, root string) (*WorkflowResult, error) {
	w, err := startWorld(c, root, "workflow", workflowScript(), 4)
	if err != nil {
		return nil, err
	}
	defer w.stop()
	put := func(name, doc string) error {
		spec := map[string]any{"tools": []string{"ls"}, "perRunMaxCostUSD": "1000.00", "maxToolCalls": 1000, "model": map[string]any{"name": benchModel}}
		if doc != "" {
			spec["workflow"] = json.RawMessage(doc)
		}
		return w.do("PUT", "/v2/agents/"+name, map[string]any{"metadata": map[string]any{"name": name}, "spec": spec}, nil)
	}
	const items, conc = 1000, 16
	list := make([]int, items)
	for i := range list {
		list[i] = i
	}
	inMap, _ := json.Marshal(map[string]any{"items": list})
	for _, a := range []struct{ name, doc string }{{"b-builtin", ""}, {"b-chain", lsWorkflow(workflowSteps, false, 0)}, {"b-map", lsWorkflow(0, true, conc)}, {"b-questions", questionWorkflow(conc)}, {"b-sift", siftWorkflow()}} {
		if err := put(a.name, a.doc); err != nil {
			return nil, fmt.Errorf("agent %s: %w", a.name, err)
		}
	}
	exec := func(agent, input string) (float64, api.AgentRun, error) {
		name, err := w.startRun(agent, input)
		if err != nil {
			return 0, api.AgentRun{}, err
		}
		for deadline := time.Now().Add(c.timeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			r, err := w.getRun(name)
			if err != nil {
				return 0, r, err
			}
			if api.Finished(r.Status.Phase) {
				if r.Status.Phase != api.PhaseSucceeded || r.Status.StartedAt == nil || r.Status.FinishedAt == nil {
					return 0, r, fmt.Errorf("run %s ended %s (%s: %s)", name, r.Status.Phase, r.Status.Reason, r.Status.Message)
				}
				return float64(r.Status.FinishedAt.Sub(*r.Status.StartedAt).Microseconds()) / 1000, r, nil
			}
		}
		return 0, api.AgentRun{}, fmt.Errorf("run %s did not finish within %s", name, c.timeout)
	}
	res := &WorkflowResult{Steps: workflowSteps, MapItems: items, MapConcurrency: conc}
	progress("workflow: warm-up and the built-in run")
	if _, _, err := exec("b-chain", "{}"); err != nil { // warm-up
		return nil, err
	}
	if res.BuiltinMs, _, err = exec("b-builtin", "list the folder"); err != nil {
		return nil, err
	}
	progress("workflow: a chain of %d call nodes", workflowSteps)
	if res.WorkflowMs, _, err = exec("b-chain", "{}"); err != nil {
		return nil, err
	}
	progress("workflow: a map of %d items, %d at a time", items, conc)
	res.ServerRSSBeforeK = procStatus(w.srv.pid)["VmRSS"]
	ms, run, err := exec("b-map", string(inMap))
	if err != nil {
		return nil, err
	}
	steps, err := w.steps(run.Metadata.Name)
	if err != nil {
		return nil, err
	}
	res.MapMs = ms
	res.MapStepsPerSec = float64(len(steps)) / (ms / 1000)
	res.ServerPeakRSSK = procStatus(w.srv.pid)["VmHWM"]
	res.ServerRSSAfterK = procStatus(w.srv.pid)["VmRSS"]
	progress("workflow: a map of %d questions answered after %s each, %d at a time", questionItems, questionLatency, conc)
	qIn, _ := json.Marshal(map[string]any{"items": list[:questionItems]})
	res.QuestionItems, res.QuestionLatencyMs = questionItems, float64(questionLatency.Milliseconds())
	if res.QuestionMapMs, run, err = exec("b-questions", string(qIn)); err != nil {
		return nil, err
	}
	if steps, err = w.steps(run.Metadata.Name); err != nil {
		return nil, err
	}
	res.QuestionStepsPerS = float64(len(steps)) / (res.QuestionMapMs / 1000)
	progress("workflow: the same %d questions as one sift", questionItems)
	if res.SiftMs, run, err = exec("b-sift", string(qIn)); err != nil {
		return nil, err
	}
	if steps, err = w.steps(run.Metadata.Name); err != nil {
		return nil, err
	}
	for _, s := range steps {
		if s.Kind == "model" {
			res.SiftModelCalls++
		}
	}
	res.BuiltinPerStepMs = res.BuiltinMs / workflowSteps
	res.WorkflowPerNodeMs = res.WorkflowMs / workflowSteps
	return res, nil
}

func printWorkflow(r *WorkflowResult) {
	fmt.Printf("workflow: %d ls calls: built-in loop %.1f ms (%.2f ms per tool step, with its two model calls), workflow chain %.1f ms (%.2f ms per call node)\n",
		r.Steps, r.BuiltinMs, r.BuiltinPerStepMs, r.WorkflowMs, r.WorkflowPerNodeMs)
	fmt.Printf("workflow: map of %d ls calls, %d at a time: %.0f ms, %.0f steps/s, server peak RSS %d MiB\n",
		r.MapItems, r.MapConcurrency, r.MapMs, r.MapStepsPerSec, r.ServerPeakRSSK>>10)
	fmt.Printf("workflow: server RSS %d MiB before the map, %d MiB after\n", r.ServerRSSBeforeK>>10, r.ServerRSSAfterK>>10)
	fmt.Printf("workflow: map of %d questions (%.0f ms scripted latency each), %d at a time: %.0f ms, %.0f steps/s (one at a time: at least %.0f ms)\n",
		r.QuestionItems, r.QuestionLatencyMs, r.MapConcurrency, r.QuestionMapMs, r.QuestionStepsPerS, float64(r.QuestionItems)*r.QuestionLatencyMs)
	fmt.Printf("workflow: the same %d questions as one sift: %.0f ms, %d model call(s)\n", r.QuestionItems, r.SiftMs, r.SiftModelCalls)
}
