package console

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/cost"
	"agentrun.dev/agentrun/internal/humanjson"
)

// The run page (GET /runs/NAME): a header (agent, revision, phase, cost against the cap, runner,
// started and ended), what needs the person at the top (pending approvals, the answer a question
// waits on, raising the cap), then sections a person scans: Transcript (each turn's model text,
// streaming in while the call runs, with its tool calls folded, input and result), Timeline (a
// server-drawn waterfall of the steps, turns as rows, and the steps' table with a deep link
// #step-KEY and the JSON of each step), Files, Computer, Tree (workflows) and Raw (the run's
// resource as JSON). GET /runs/NAME/steps/KEY is one step's JSON, exactly as the API's steps list
// has it (secret values never enter the journal: see docs/security.md); GET /runs/NAME/part/WHICH
// is the transcript or the timeline alone, which the page's script swaps in as steps complete.

// stepRow is one step of the run as the Timeline's table shows it.
type stepRow struct {
	api.Step
	ID       string // the row's id: "step-" + key, the target of a deep link
	Turn     string // the row of the waterfall it is drawn on
	Start    string // from the run's start: "+1.2 s"
	Duration string // "850 ms"; "running" while it runs
	Mark     string // "approval" or "question": a person decided or answered here
}

// txItem is one entry of the transcript.
type txItem struct {
	Kind    string // "input", "model", "question", "message", "answer"
	StepKey string
	Who     string // who speaks: "You", the model's name, "The agent asks"
	Text    string
	// Live: the model call is running; its text streams into the item (console.js).
	Live  bool
	Calls []txCall
	Cost  string
	Time  string
}

// txCall is a tool call the model asked for, folded under its model text.
type txCall struct {
	StepKey, Tool, Input, Result, State, Duration string
	IsError                                       bool
	// Approval is a person's decision on the call ("approved by person:admin"), or "waiting
	// for your approval".
	Approval string
}

// turnKey is the waterfall row a step is drawn on: the key up to its turn ("t3", or
// "wf/a/t3" for a workflow agent node's turn), else its first part ("computer", "m2", "learn").
func turnKey(key string) string {
	parts := strings.Split(key, "/")
	last := -1
	for i, p := range parts {
		if len(p) > 1 && p[0] == 't' && isDigits(p[1:]) {
			last = i
		}
	}
	if last >= 0 {
		return strings.Join(parts[:last+1], "/")
	}
	if len(parts) > 1 && parts[0] == "wf" {
		return parts[0] + "/" + parts[1]
	}
	return parts[0]
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// turnLabel names a waterfall row for people: "turn 4" for t3.
func turnLabel(row string) string {
	i := strings.LastIndex(row, "/")
	last := row[i+1:]
	if len(last) > 1 && last[0] == 't' && isDigits(last[1:]) {
		n, _ := strconv.Atoi(last[1:])
		if i < 0 {
			return fmt.Sprintf("turn %d", n+1)
		}
		return fmt.Sprintf("%s turn %d", row[:i], n+1)
	}
	return row
}

// durText is a duration as people read it.
func durText(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return "0 ms"
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm %02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh %02dm", int(d.Hours()), int(d.Minutes())%60)
}

// runSpan is when the run's steps began and when the page draws them up to (the run's end, or
// now while it runs).
func runSpan(run *api.AgentRun, steps []api.Step, now time.Time) (time.Time, time.Time) {
	var t0 time.Time
	if run.Status.StartedAt != nil {
		t0 = *run.Status.StartedAt
	}
	for _, s := range steps {
		if !s.StartedAt.IsZero() && (t0.IsZero() || s.StartedAt.Before(t0)) {
			t0 = s.StartedAt
		}
	}
	end := now
	if run.Status.FinishedAt != nil {
		end = *run.Status.FinishedAt
	}
	for _, s := range steps {
		if s.CompletedAt != nil && s.CompletedAt.After(end) {
			end = *s.CompletedAt
		}
	}
	if t0.IsZero() {
		t0 = end
	}
	return t0, end
}

// stepEnd is when a step ended, or now for one still running (or left Started by a crash).
func stepEnd(s api.Step, end time.Time) time.Time {
	if s.CompletedAt != nil {
		return *s.CompletedAt
	}
	if s.State == api.StepStarted {
		return end
	}
	return s.StartedAt
}

func stepRows(run *api.AgentRun, steps []api.Step, events []api.Event, now time.Time) []stepRow {
	// A question's step is recorded when the answer comes: it is drawn from when it was asked.
	asked := map[string]time.Time{}
	for _, ev := range events {
		if ev.Type == api.EventRunQuestion && ev.StepKey != "" {
			if _, ok := asked[ev.StepKey]; !ok {
				asked[ev.StepKey] = ev.Time
			}
		}
	}
	steps = append([]api.Step(nil), steps...)
	for i, s := range steps {
		if t, ok := asked[s.Key]; ok && s.Kind == "question" && !t.IsZero() && t.Before(s.StartedAt) {
			steps[i].StartedAt = t
		}
	}
	t0, end := runSpan(run, steps, now)
	rows := make([]stepRow, 0, len(steps))
	for _, s := range steps {
		r := stepRow{Step: s, ID: "step-" + s.Key, Turn: turnKey(s.Key)}
		if !s.StartedAt.IsZero() {
			r.Start = "+" + durText(s.StartedAt.Sub(t0))
			switch {
			case s.CompletedAt != nil:
				r.Duration = durText(s.CompletedAt.Sub(s.StartedAt))
			case s.State == api.StepStarted && !api.Finished(run.Status.Phase):
				r.Duration = "running " + durText(end.Sub(s.StartedAt))
			}
		}
		switch s.Kind {
		case api.StepKindApproval, api.StepKindQuestion:
			r.Mark = string(s.Kind)
		}
		rows = append(rows, r)
	}
	return rows
}

// waterfall draws the steps as bars on a time axis, one row per turn: model calls, tool calls,
// and the approvals and questions where the run waited on a person marked as such. It is an
// <svg role="img"> whose name says what it shows; the steps table under it has every number.
func waterfall(run *api.AgentRun, rows []stepRow, now time.Time) template.HTML {
	if len(rows) == 0 {
		return ""
	}
	steps := make([]api.Step, len(rows))
	for i, r := range rows {
		steps[i] = r.Step
	}
	t0, end := runSpan(run, steps, now)
	span := end.Sub(t0)
	if span <= 0 {
		span = time.Millisecond
	}
	var order []string
	seen := map[string]int{}
	for _, r := range rows {
		if _, ok := seen[r.Turn]; !ok {
			seen[r.Turn] = len(order)
			order = append(order, r.Turn)
		}
	}
	const width, label, rowH, top = 960.0, 170.0, 26.0, 22.0
	chartW := width - label - 100
	height := top + rowH*float64(len(order)) + 8
	x := func(t time.Time) float64 { return label + chartW*float64(t.Sub(t0))/float64(span) }
	var b strings.Builder
	name := fmt.Sprintf("Timeline of run %s: %d steps in %d rows over %s; each bar is a step, from its start to its end", run.Metadata.Name, len(rows), len(order), durText(span))
	fmt.Fprintf(&b, `<svg class="waterfall" role="img" aria-label="%s" viewBox="0 0 %.0f %.0f" width="100%%" preserveAspectRatio="xMinYMin meet">`, esc(name), width, height)
	// The axis: five ticks over the span.
	for i := 0; i <= 4; i++ {
		tx := label + chartW*float64(i)/4
		fmt.Fprintf(&b, `<line class="wf-grid" x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f"/>`, tx, top-4, tx, height-6)
		fmt.Fprintf(&b, `<text class="wf-tick" x="%.1f" y="%.0f" text-anchor="middle">%s</text>`, tx, top-8, esc(durText(span*time.Duration(i)/4)))
	}
	for i, row := range order {
		y := top + rowH*float64(i)
		if i%2 == 1 {
			fmt.Fprintf(&b, `<rect class="wf-band" x="0" y="%.1f" width="%.0f" height="%.0f"/>`, y, width, rowH)
		}
		fmt.Fprintf(&b, `<text class="wf-label" x="6" y="%.1f">%s</text>`, y+rowH/2+4, esc(clipText(turnLabel(row), 26)))
	}
	for _, r := range rows {
		if r.StartedAt.IsZero() {
			continue
		}
		y := top + rowH*float64(seen[r.Turn])
		x1, x2 := x(r.StartedAt), x(stepEnd(r.Step, end))
		w := max(x2-x1, 2)
		cls := "wf-bar kind-" + kindClass(r.Kind) + " state-" + strings.ToLower(string(r.State))
		title := r.Key + " · " + r.Title
		if r.Duration != "" {
			title += " · " + r.Duration
		}
		if r.Mark != "" {
			// A person was asked here: a diamond over the bar marks it.
			fmt.Fprintf(&b, `<rect class="%s" x="%.1f" y="%.1f" width="%.1f" height="%.0f" data-step="%s"><title>%s</title></rect>`, cls, x1, y+9, w, 8.0, esc(r.Key), esc(title))
			fmt.Fprintf(&b, `<path class="wf-mark mark-%s" d="M%.1f %.1f l6 6 l-6 6 l-6 -6 z" data-step="%s"><title>%s</title></path>`, r.Mark, x1, y+7, esc(r.Key), esc(r.Mark+": "+title))
			continue
		}
		fmt.Fprintf(&b, `<rect class="%s" x="%.1f" y="%.1f" width="%.1f" height="%.0f" rx="2" data-step="%s"><title>%s</title></rect>`, cls, x1, y+5, w, rowH-10, esc(r.Key), esc(title))
		if r.Kind == "model" && r.Duration != "" && x2+60 < width {
			fmt.Fprintf(&b, `<text class="wf-dur" x="%.1f" y="%.1f">%s</text>`, x2+4, y+rowH/2+4, esc(r.Duration))
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// kindClass is a step kind as a CSS class part (kinds are lower-case words).
func kindClass(kind api.StepKind) string {
	switch kind {
	case api.StepKindModel, api.StepKindTool, api.StepKindApproval, api.StepKindQuestion, api.StepKindMessage,
		api.StepKindComputer, api.StepKindLearning, api.StepKindRoute:
		return string(kind)
	}
	return "other"
}

func clipText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// costBar is the run's cost against its cap: a bar with the cap marked, and the amounts in
// words beside it. An unknown cost is said, never drawn as $0.
func costBar(c *api.RunCost) template.HTML {
	if c == nil || c.TotalUSD == "" {
		return `<span class="money unknown">unknown</span> <span class="muted">(nothing priced yet)</span>`
	}
	words := template.HTMLEscapeString(cost.Dollars(c.TotalUSD))
	if c.TotalUSD == "unknown" {
		words = `<span class="money unknown">unknown</span>`
	} else {
		words = `<span class="money">` + words + `</span>`
	}
	if c.LimitUSD == "" {
		if c.Billing == "none" {
			return template.HTML(words + ` <span class="muted">(your own key: metered, no cap)</span>`)
		}
		return template.HTML(words + ` <span class="muted">(no cap)</span>`)
	}
	limit, err := cost.ParseUSD(c.LimitUSD)
	if err != nil {
		return template.HTML(words)
	}
	known := strings.TrimPrefix(strings.TrimPrefix(c.TotalUSD, "at least "), "at most ")
	spent, err := cost.ParseUSD(known)
	unknown := c.TotalUSD == "unknown" || err != nil
	partial := strings.HasPrefix(c.TotalUSD, "at least ")
	const w, h = 220.0, 14.0
	scale := max(float64(limit), float64(spent), 1)
	fill := w * float64(spent) / scale
	capX := w * float64(limit) / scale
	pct := ""
	if limit > 0 && !unknown {
		switch p := int(100 * float64(spent) / float64(limit)); {
		case p == 0 && spent > 0:
			pct = " (under 1% of the cap)"
		default:
			pct = fmt.Sprintf(" (%d%% of the cap)", p)
		}
	}
	name := "Cost " + cost.Dollars(c.TotalUSD) + " of a " + cost.Dollars(c.LimitUSD) + " cap" + pct
	cls := "cb-fill"
	switch {
	case spent > limit:
		cls += " over"
	case partial:
		cls += " partial"
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="costbar" role="img" aria-label="%s" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f">`, esc(name), w+4, h+4, w+4, h+4)
	fmt.Fprintf(&b, `<rect class="cb-track" x="1" y="3" width="%.0f" height="%.0f" rx="3"/>`, w, h-4)
	if !unknown {
		fmt.Fprintf(&b, `<rect class="%s" x="1" y="3" width="%.1f" height="%.0f" rx="3"/>`, cls, fill, h-4)
	}
	fmt.Fprintf(&b, `<line class="cb-cap" x1="%.1f" y1="0" x2="%.1f" y2="%.0f"/>`, capX+1, capX+1, h+4)
	b.WriteString(`</svg>`)
	return template.HTML(b.String() + ` ` + words + ` <span class="muted">of</span> <span class="money">` + esc(cost.Dollars(c.LimitUSD)) + `</span>` + esc(pct))
}

// transcript is the conversation as the journal has it: the run's input, each model call's text
// with the tool calls it asked for, the questions the agent asked and the answers, the messages
// it read, and the answer.
func transcript(run *api.AgentRun, rows []stepRow, approvals []Approval) []txItem {
	decided := map[string]string{} // a tool call's step key -> the decision on it
	for _, a := range approvals {
		k := strings.TrimSuffix(a.StepKey, "/approval")
		switch {
		case a.State == "pending":
			decided[k] = "waiting for your approval"
		case a.DecidedBy != "":
			decided[k] = a.State + " by " + a.DecidedBy
		default:
			decided[k] = a.State
		}
	}
	items := []txItem{{Kind: "input", Who: "Input", Text: run.Spec.Input}}
	byTurn := map[string]int{} // a turn's key -> its model item, for the tool calls after it
	for _, r := range rows {
		s := r.Step
		switch s.Kind {
		case "model":
			it := txItem{Kind: "model", StepKey: s.Key, Who: "Model", Time: r.Duration}
			var res struct {
				Model   string `json:"model"`
				Content []struct {
					Type  string          `json:"type"`
					Text  string          `json:"text"`
					Name  string          `json:"name"`
					Input json.RawMessage `json:"input"`
				} `json:"content"`
			}
			if len(s.Result) > 0 && json.Unmarshal(s.Result, &res) == nil {
				if res.Model != "" {
					it.Who = res.Model
				}
				var text strings.Builder
				for _, b := range res.Content {
					if b.Type == "text" {
						text.WriteString(b.Text)
					}
				}
				it.Text = text.String()
			}
			it.Live = s.State == api.StepStarted && !api.Finished(run.Status.Phase)
			if s.CostMicros != nil {
				it.Cost = cost.Dollars(cost.Micros(*s.CostMicros).String())
			}
			byTurn[r.Turn] = len(items)
			items = append(items, it)
		case "tool":
			var args struct {
				Tool  string          `json:"tool"`
				Input json.RawMessage `json:"input"`
			}
			json.Unmarshal(s.Args, &args)
			call := txCall{StepKey: s.Key, Tool: args.Tool, State: string(s.State), Duration: r.Duration, Approval: decided[s.Key]}
			if call.Tool == "" {
				call.Tool = s.Title
			}
			if len(args.Input) > 0 {
				call.Input = humanjson.String(args.Input)
			}
			var res struct {
				Content string
				IsError bool
			}
			if len(s.Result) > 0 && json.Unmarshal(s.Result, &res) == nil {
				call.Result, call.IsError = res.Content, res.IsError
			}
			if s.Error != "" {
				call.Result, call.IsError = s.Error, true
			}
			if i, ok := byTurn[r.Turn]; ok {
				items[i].Calls = append(items[i].Calls, call)
			} else {
				items = append(items, txItem{Kind: "model", StepKey: s.Key, Who: "Tool call", Calls: []txCall{call}})
			}
		case "question":
			var args struct {
				Question string `json:"question"`
			}
			json.Unmarshal(s.Args, &args)
			var m api.Message
			json.Unmarshal(s.Result, &m)
			items = append(items, txItem{Kind: "question", StepKey: s.Key, Who: "The agent asked", Text: args.Question})
			if m.Payload != "" {
				items = append(items, txItem{Kind: "message", StepKey: s.Key, Who: "You answered", Text: m.Payload})
			}
		case "message":
			var m api.Message
			json.Unmarshal(s.Result, &m)
			items = append(items, txItem{Kind: "message", StepKey: s.Key, Who: "Message", Text: m.Payload})
		}
	}
	if a := run.Status.Answer; a != nil {
		items = append(items, txItem{Kind: "answer", Who: "Answer", Text: a.Preview})
	}
	return items
}

// needs is what waits on the person, shown at the top of the page.
type needs struct {
	Approvals []Approval
	// Answer: the run waits on an answer (a question, a takeover, a message).
	Answer bool
	// Cap: the run waits on its cap; Needed is the least cap that lets it go on.
	Cap            bool
	CapNow, Needed string
	// Resolve is the step a person must resolve (NeedsResolution).
	Resolve string
}

func (n needs) Any() bool { return len(n.Approvals) > 0 || n.Answer || n.Cap || n.Resolve != "" }

func needsOf(run *api.AgentRun, approvals []Approval) needs {
	var n needs
	for _, a := range approvals {
		if a.State == "pending" {
			n.Approvals = append(n.Approvals, a)
		}
	}
	st := run.Status
	n.Answer = answerable(run)
	if st.Phase == api.PhaseWaiting && st.Reason == api.ReasonMaxCostReached && run.Spec.Group == "" {
		n.Cap = true
		if st.Cost != nil {
			n.CapNow, n.Needed = st.Cost.LimitUSD, st.Cost.NeededUSD
		}
		if n.Needed == "" {
			n.Needed = n.CapNow
		}
	}
	if st.Phase == api.PhaseNeedsResolution && st.WaitingOn != nil {
		n.Resolve = st.WaitingOn.StepKey
	}
	return n
}

// runJSON is the run's resource as the API returns it, indented.
func runJSON(run *api.AgentRun) string {
	b, err := json.MarshalIndent(run, "", "  ")
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// stepJSON is GET /runs/NAME/steps/KEY: the step as GET /v2/agentruns/NAME/steps lists it,
// indented (its arguments and result as stored; no secret value is ever stored in a step).
func (c *Console) stepJSON(w http.ResponseWriter, r *http.Request) {
	name, key := r.PathValue("name"), r.PathValue("key")
	steps, err := c.Store.ListSteps(r.Context(), name)
	if err != nil {
		http.Error(w, "no run "+name, http.StatusNotFound)
		return
	}
	for _, s := range steps {
		if s.Key != key {
			continue
		}
		raw, err := json.Marshal(s)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		var out bytes.Buffer
		json.Indent(&out, raw, "", "  ")
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		out.WriteByte('\n')
		w.Write(out.Bytes())
		return
	}
	http.Error(w, fmt.Sprintf("run %s has no step %q", name, key), http.StatusNotFound)
}

// runData is everything the run page's body (and its parts) draw.
func (c *Console) runData(ctx context.Context, r *http.Request, run *api.AgentRun) map[string]any {
	name := run.Metadata.Name
	steps, _ := c.Store.ListSteps(ctx, name)
	api.MarkRolledBack(steps)
	msgs, _ := c.Store.ListMessages(ctx, name, 0)
	events, _ := c.Store.ListEvents(ctx, name, 0, 0)
	files, _ := c.Store.ListFileInfos(ctx, name)
	var approvals []Approval
	if c.Approver != nil {
		approvals, _ = c.Approver.Approvals(ctx, name)
	}
	now := time.Now()
	rows := stepRows(run, steps, events, now)
	streaming := !api.Finished(run.Status.Phase)
	n := needsOf(run, approvals)
	// Without script: refresh the whole page, but not under a person writing an answer or a reason.
	refresh := streaming && !n.Any()
	var after int64
	if len(events) > 0 {
		after = events[len(events)-1].Seq
	}
	var elapsed string
	if st := run.Status.StartedAt; st != nil {
		end := now
		if run.Status.FinishedAt != nil {
			end = *run.Status.FinishedAt
		}
		elapsed = durText(end.Sub(*st))
	}
	sort.SliceStable(approvals, func(i, j int) bool { return approvals[i].ID < approvals[j].ID })
	screen := c.screenSection(run, steps)
	return map[string]any{"Run": run, "Steps": rows, "Queued": api.QueuedMessages(msgs, steps), "Events": events, "After": after, "Files": fileRows(name, files),
		"Refresh": refresh, "Streaming": streaming, "View": pageView(run), "Script": scriptVersion,
		"Approvals": approvals, "Needs": n, "CSRF": csrfToken(r), "Screen": screen, "Keys": screenKeyButtons,
		"AnswerOpen": n.Answer, "Takeover": takingOver(run), "Learning": runLearningOf(run.Spec.Agent, events, approvals, run.Status.PayloadsPurgedAt),
		"Tree": c.workflowTree(ctx, run), "Transcript": transcript(run, rows, approvals), "Waterfall": waterfall(run, rows, now),
		"CostBar": costBar(run.Status.Cost), "Elapsed": elapsed, "JSON": runJSON(run), "LiveText": c.LiveText != nil}
}

func (c *Console) run(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	run, err := c.Store.GetRun(r.Context(), name)
	if err != nil {
		c.notFound(w, r, "No such run", "There is no run "+name+".")
		return
	}
	data := c.runData(r.Context(), r, run)
	desc := "A run of agent " + run.Spec.Agent + ": what it did, what it costs and what needs you."
	c.page(w, r, runTmpl, Page{Title: name, Description: desc, Crumbs: []Crumb{{"Runs", "/runs"}},
		Refresh: boolInt(data["Refresh"].(bool), 2), RefreshNoscript: true, Scripts: []string{"console.js"}, Data: data})
}

// runPart is GET /runs/NAME/part/WHICH: the transcript, the timeline or the header's facts alone, as the
// page draws it, for the page's script to swap in while the run goes on.
func (c *Console) runPart(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	which := r.PathValue("which")
	if which != "transcript" && which != "timeline" && which != "facts" {
		http.NotFound(w, r)
		return
	}
	run, err := c.Store.GetRun(r.Context(), name)
	if err != nil {
		http.Error(w, "no run "+name, http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := runTmpl.ExecuteTemplate(w, which, c.runData(r.Context(), r, run)); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// CapRaiser raises a run's cap the way the API does (the server implements it).
type CapRaiser func(ctx context.Context, run, capUSD, user string) error

// raiseCap is POST /runs/NAME/cap from the page's "raise the cap" form.
func (c *Console) raiseCap(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	want := csrfToken(r)
	if want == "" || subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(want)) != 1 {
		http.Error(w, "the form is stale or did not come from this console: reload the page", http.StatusForbidden)
		return
	}
	name := r.PathValue("name")
	if c.RaiseCap == nil {
		http.Error(w, "this console cannot raise caps", http.StatusNotImplemented)
		return
	}
	ck, _ := r.Cookie(cookieName)
	user, _ := c.Accounts.Verify(ck.Value, time.Now())
	if err := c.RaiseCap(r.Context(), name, strings.TrimSpace(r.PostForm.Get("maxCostUSD")), user); err != nil {
		status := http.StatusConflict
		if ae, ok := err.(*api.Error); ok && ae.Status != 0 {
			status = ae.Status
		}
		http.Error(w, err.Error(), status)
		return
	}
	http.Redirect(w, r, "/runs/"+name, http.StatusSeeOther)
}
