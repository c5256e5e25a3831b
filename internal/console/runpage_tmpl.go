package console

import (
	"html/template"

	"agentrun.dev/agentrun/internal/api"
)

// runPill is the run's status pill on its page: the layout's pill, with the phase word in
// #phase (the script and the tests read it).
func runPill(p api.Phase, r api.Reason) template.HTML {
	tn, icon := tone(string(p), string(r))
	return template.HTML(`<span class="pill tone-` + tn + `">` + iconSVG(icon) + `<span id="phase">` + esc(string(p)) + `</span></span>`)
}

// runFuncs are the run page's own template funcs.
var runFuncs = template.FuncMap{
	"stepHref": func(run, key string) string {
		return "/runs/" + template.URLQueryEscaper(run) + "/steps/" + pathEscape(key)
	},
	"turnLabel": turnLabel,
	// stepAnchor is the link to a step's row, its key readable in it ("#step-t1/tool/0").
	"stepAnchor": func(key string) template.URL { return template.URL("#step-" + pathEscape(key)) },
}

// pathEscape escapes each segment of a step key for a URL path, keeping its slashes.
func pathEscape(key string) string {
	out := []byte{}
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '/', c == '-', c == '_', c == '.', c == '~':
			out = append(out, c)
		default:
			out = append(out, '%', "0123456789ABCDEF"[c>>4], "0123456789ABCDEF"[c&15])
		}
	}
	return string(out)
}

// runBody is the run page inside the layout. Its parts "transcript" and "timeline" are also
// served alone (GET /runs/NAME/part/WHICH) for the script to swap in.
//
// Per-step actions: the "stepActions" template is the last cell of each step's row in the
// Timeline's table (its JSON view, opened in the row under it, and its JSON as a file); an action
// on one step (such as forking the run from it) goes there.
const runBody = `{{define "stepActions"}}<button type="button" class="button small json-toggle" aria-expanded="false" aria-controls="json-{{.Key}}" data-step="{{.Key}}" hidden>JSON<span class="sr-only"> of step {{.Key}}</span></button> <a class="small" href="{{stepHref .Run .Key}}">raw<span class="sr-only"> JSON of step {{.Key}}</span></a>{{template "forkAction" .}}{{end}}
{{define "facts"}}{{with .Run}}<dl class="facts">
<div><dt>Agent</dt><dd><a href="/agents/{{.Spec.Agent}}">{{.Spec.Agent}}</a></dd></div>
<div><dt>Revision</dt><dd>{{if .Status.AgentRevision}}{{.Status.AgentRevision}}{{else}}<span class="muted">not pinned yet</span>{{end}}</dd></div>
<div class="fact-cost"><dt>Cost</dt><dd id="cost-bar">{{$.CostBar}}</dd></div>
<div><dt>Runner</dt><dd>{{if .Status.Runner}}{{.Status.Runner}}{{else}}<span class="muted">none yet</span>{{end}}</dd></div>
<div><dt>Started</dt><dd>{{if .Status.StartedAt}}<time datetime="{{.Status.StartedAt.UTC.Format "2006-01-02T15:04:05Z07:00"}}" title="{{.Status.StartedAt.UTC.Format "2006-01-02 15:04:05 UTC"}}">{{ago .Status.StartedAt}}</time>{{else}}<span class="muted">not yet</span>{{end}}</dd></div>
<div><dt>Ended</dt><dd>{{if .Status.FinishedAt}}<time datetime="{{.Status.FinishedAt.UTC.Format "2006-01-02T15:04:05Z07:00"}}" title="{{.Status.FinishedAt.UTC.Format "2006-01-02 15:04:05 UTC"}}">{{ago .Status.FinishedAt}}</time>{{with $.Elapsed}} <span class="muted">after {{.}}</span>{{end}}{{else}}<span class="muted">running{{with $.Elapsed}} for {{.}}{{end}}</span>{{end}}</dd></div>
</dl>{{end}}{{end}}
{{define "transcript"}}<h2 id="transcript">Transcript</h2>
<ol class="transcript" id="transcript-items">{{range .Transcript}}<li class="tx tx-{{.Kind}}{{if .Live}} live{{end}}"{{if .StepKey}} data-step="{{.StepKey}}"{{end}}>
<div class="tx-head"><span class="tx-who">{{.Who}}</span>{{if .StepKey}} <a class="tx-step" href="{{stepAnchor .StepKey}}">{{.StepKey}}</a>{{end}}{{with .Time}} <span class="muted">{{.}}</span>{{end}}{{with .Cost}} <span class="money">{{.}}</span>{{end}}{{if .Live}} <span class="tx-streaming" role="status">writing…</span>{{end}}</div>
{{if or .Text .Live}}<div class="tx-text"{{if .Live}} data-live-step="{{.StepKey}}"{{end}}>{{.Text}}</div>{{end}}
{{range .Calls}}<details class="tx-call{{if .IsError}} failed{{end}}" data-step="{{.StepKey}}"><summary><span class="tx-tool">{{.Tool}}</span> <span class="muted">{{.State}}{{with .Duration}} · {{.}}{{end}}{{if .IsError}} · error{{end}}</span>{{with .Approval}} <span class="tx-approval">{{.}}</span>{{end}}</summary>
<div class="tx-io"><h3 class="tx-label">Input</h3><pre>{{.Input}}</pre><h3 class="tx-label">Result</h3><pre>{{if .Result}}{{.Result}}{{else}}(none yet){{end}}</pre><p><a href="{{stepAnchor .StepKey}}">Step {{.StepKey}}</a></p></div></details>{{end}}
</li>{{end}}</ol>
{{with .Run.Status.Turns}}<table class="table turns"><caption>Turns: the model of each prompt and what it cost</caption><thead><tr><th scope="col" class="num">#</th><th scope="col">Model</th><th scope="col">Chosen by</th><th scope="col" class="num">Tokens in</th><th scope="col" class="num">Tokens out</th><th scope="col" class="num">Cost</th></tr></thead><tbody>
{{range .}}<tr><td class="num">{{.Index}}</td><td>{{.Model}}</td><td>{{.ChosenBy}}</td><td class="num">{{.InputTokens}}</td><td class="num">{{.OutputTokens}}</td><td class="num">{{money .CostUSD}}</td></tr>{{end}}</tbody></table>{{end}}{{end}}
{{define "timeline"}}<h2 id="timeline-h">Timeline</h2>
{{if .Queued}}<table id="queued" class="table"><caption>Queued messages: sent while a turn was in flight, read when it ends</caption><thead><tr><th scope="col" class="num">#</th><th scope="col">Sent</th><th scope="col">If busy</th><th scope="col">Message</th></tr></thead><tbody>
{{range .Queued}}<tr><td class="num">{{.Seq}}</td><td class="num">{{clock .Time}}</td><td>{{if .IfBusy}}{{.IfBusy}}{{else}}-{{end}}</td><td>{{.Payload}}</td></tr>{{end}}</tbody></table>{{end}}
{{if .Steps}}<figure class="chart waterfall-fig">{{.Waterfall}}
<figcaption class="legend"><span class="key kind-model"></span> model call <span class="key kind-tool"></span> tool call <span class="key kind-approval"></span> approval <span class="key kind-question"></span> question <span class="key kind-other"></span> other · a diamond marks where the run asked you. Every step is in the table below.</figcaption></figure>
<table class="table steps" id="steps"><caption>Steps of {{.Run.Metadata.Name}}, in the order they started (the chart's data)</caption>
<thead><tr><th scope="col">#</th><th scope="col">Row</th><th scope="col">Step</th><th scope="col">Kind</th><th scope="col">State</th><th scope="col" class="num">Start</th><th scope="col" class="num">Duration</th><th scope="col">What</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
<tbody>{{range .Steps}}<tr id="{{.ID}}" data-kind="{{.Kind}}" data-state="{{.State}}"{{with .Mark}} class="marked"{{end}}><td class="num">{{.Seq}}</td><td>{{turnLabel .Turn}}</td><td><a href="{{stepAnchor .Key}}" class="step-link">{{.Key}}</a></td><td>{{.Kind}}{{with .Mark}} <span class="mark-word">(asked you)</span>{{end}}</td>
<td>{{.State}}{{if .Resolution}} ({{.Resolution}}){{end}}{{if .RolledBack}} (rolled back){{end}}{{if gt .Attempt 1}} · attempt {{.Attempt}}{{end}}</td><td class="num">{{.Start}}</td><td class="num">{{.Duration}}</td><td>{{.Title}}{{if .Error}}<br><span class="field-error">{{.Error}}</span>{{end}}</td>
<td class="step-actions">{{template "stepActions" (stepOf $.Run.Metadata.Name .Key .State $.CSRF)}}</td></tr>
<tr class="json-row" id="json-{{.Key}}" hidden><td colspan="9"><pre class="json" tabindex="0" aria-label="JSON of step {{.Key}}"></pre></td></tr>{{end}}</tbody></table>
{{else}}<p class="empty">No steps yet: the run has not started its first model call.</p>{{end}}
{{if .Approvals}}<table class="table approvals" id="approvals"><caption>Approvals: the tool calls a person was asked to allow</caption><thead><tr><th scope="col" class="num">#</th><th scope="col">Tool</th><th scope="col">Arguments</th><th scope="col">Why asked</th><th scope="col">Decision</th></tr></thead><tbody>
{{range .Approvals}}<tr id="{{if eq .State "pending"}}approval-row-{{else}}approval-{{end}}{{.ID}}" data-state="{{.State}}"><td class="num">{{.ID}}</td><td><code>{{.Tool}}</code>{{with .StepKey}} <a href="{{stepAnchor .}}">{{.}}</a>{{end}}</td><td><pre>{{.Input}}</pre></td><td>{{.Reason}}</td><td>{{if eq .State "pending"}}<a href="#approval-{{.ID}}">waiting for you</a>{{else}}{{.State}}{{if .DecidedBy}} by {{.DecidedBy}}{{end}}{{end}}</td></tr>{{end}}</tbody></table>{{end}}{{end}}
<div id="run" data-run="{{.Run.Metadata.Name}}" data-view="{{.View}}" data-streaming="{{.Streaming}}">
{{with .Run}}<header class="run-head card">
<div class="run-title"><span id="phase-pill">{{runPill .Status.Phase .Status.Reason}}</span><span id="reason" class="reason">{{if .Status.Reason}} ({{.Status.Reason}}){{end}}</span>{{if $.Streaming}}<span id="live" class="live" hidden></span>{{else}}<span id="live" class="live">ended</span>{{end}}</div>
<div id="facts-part">{{template "facts" $}}</div><span id="cost" hidden>{{with costText .Status.Cost}}{{.}}{{end}}</span></header>
<p class="note wait" id="waiting"{{if not .Status.WaitingOn}} hidden{{end}}>{{with .Status.WaitingOn}}Waiting on: {{.Kind}}{{if .Question}}: <b>{{.Question}}</b>{{end}}{{if .StepKey}} (step {{.StepKey}}){{end}}{{if .Detail}} — {{.Detail}}{{end}}{{end}}</p>
<p id="status-message" class="note"{{if or (not .Status.Message) (and .Status.WaitingOn (eq .Status.Message .Status.WaitingOn.Detail))}} hidden{{end}}>{{.Status.Message}}</p>
<p id="reload-note" class="note wait" hidden></p>
{{end}}
{{with .Needs}}{{if .Any}}<section id="needs" class="needs card" aria-labelledby="needs-h"><h2 id="needs-h">Needs you</h2>
{{range .Approvals}}<form class="approval" id="approval-{{.ID}}" method="post" action="/runs/{{$.Run.Metadata.Name}}/approvals/{{.ID}}" aria-labelledby="approval-{{.ID}}-h"><input type="hidden" name="csrf" value="{{$.CSRF}}">
<h3 id="approval-{{.ID}}-h">Approve <code>{{.Tool}}</code>?{{with .StepKey}} <a class="tx-step" href="{{stepAnchor .}}">{{.}}</a>{{end}}</h3>{{with .Reason}}<p class="help">{{.}}</p>{{end}}<pre>{{.Input}}</pre>
<div class="field"><label for="reason-{{.ID}}">Reason (optional, kept with your decision)</label><input id="reason-{{.ID}}" name="reason"></div>
<p class="buttons"><button class="button primary" name="decision" value="approve">Approve</button> <button class="button danger" name="decision" value="deny">Deny</button></p></form>{{end}}
{{if .Cap}}<form id="cap-form" method="post" action="/runs/{{$.Run.Metadata.Name}}/cap"><input type="hidden" name="csrf" value="{{$.CSRF}}">
<h3>The run reached its cost cap{{with .CapNow}} of ${{.}}{{end}}</h3><div class="field"><label for="cap-usd">New cap in dollars</label><input id="cap-usd" name="maxCostUSD" inputmode="decimal" value="{{.Needed}}" aria-describedby="cap-help"><p class="help" id="cap-help">At least {{with .Needed}}${{.}}{{else}}the cap now{{end}} lets it make its next call; it goes on at once.</p></div>
<p class="buttons"><button class="button primary">Raise the cap</button></p></form>{{end}}
{{with .Resolve}}<p class="note wait" id="resolve">Step <a href="{{stepAnchor .}}">{{.}}</a> was cut off and may or may not have taken effect: decide with <code>agentrun runs resolve {{$.Run.Metadata.Name}} {{.}} retry|skip|complete</code>.</p>{{end}}
</section>{{end}}{{end}}
{{with .Screen}}{{if .Takeover}}{{template "screen" $}}{{end}}{{end}}
{{if .Streaming}}<form class="card needs" id="answer-form" method="post" action="/runs/{{.Run.Metadata.Name}}/answer"{{if not .AnswerOpen}} hidden{{end}}><input type="hidden" name="csrf" value="{{.CSRF}}">
<div class="field"><label for="answer-text">{{if .Takeover}}When you are done, answer here to hand the controls back to the agent:{{else}}Answer the run (the agent reads it as your reply):{{end}}</label>
<textarea id="answer-text" name="answer" rows="3"></textarea></div><p class="buttons"><button class="button primary">Answer</button></p></form>{{end}}
{{with .Run.Status.Escalation}}<p id="escalation" class="note wait">Escalated at <b>{{.Label}}</b> ({{.Kind}}, stage {{.Stage}}): {{.Summary}}</p>{{end}}
<nav class="run-sections" aria-label="Sections of this run"><ul><li><a href="#transcript">Transcript</a></li><li><a href="#timeline-h">Timeline</a></li><li><a href="#events-h">Events</a></li><li><a href="#files-h">Files</a></li>{{if .Screen}}<li><a href="#computer-h">Computer</a></li>{{end}}{{if .Tree}}<li><a href="#tree-h">Tree</a></li>{{end}}{{if .Learning}}<li><a href="#learning">Learning</a></li>{{end}}<li><a href="#raw-h">Raw</a></li></ul></nav>
<section class="run-section" id="transcript-part">{{template "transcript" .}}</section>
{{with .Run}}{{with .Status.Answer}}{{if .Truncated}}<p class="help">The answer above is the first 4 KiB of {{.Bytes}} bytes; <code>agentrun runs answer</code> prints all of it.</p>{{end}}<pre id="answer" hidden>{{.Preview}}</pre>{{end}}{{end}}
<section class="run-section" id="timeline-part">{{template "timeline" .}}</section>
{{if .Queued}}<section class="run-section"><h2 id="queued-h">Queued messages</h2><table id="queued" class="table"><caption>Messages sent to the run that it has not read yet</caption><thead><tr><th scope="col" class="num">#</th><th scope="col" class="num">Sent</th><th scope="col">If busy</th><th scope="col">Message</th></tr></thead><tbody>
{{range .Queued}}<tr><td class="num">{{.Seq}}</td><td class="num">{{clock .Time}}</td><td>{{if .IfBusy}}{{.IfBusy}}{{else}}-{{end}}</td><td>{{.Payload}}</td></tr>{{end}}</tbody></table></section>{{end}}
<section class="run-section"><h2 id="events-h">Events</h2><table class="table events"><thead><tr><th scope="col">Time</th><th scope="col">Event</th><th scope="col">Step</th><th scope="col">Message</th></tr></thead>
<tbody id="timeline" data-after="{{.After}}">{{range .Events}}<tr data-seq="{{.Seq}}"><td class="num">{{clock .Time}}</td><td>{{.Type}}</td><td>{{.StepKey}}</td><td>{{.Message}}</td></tr>{{end}}</tbody></table></section>
<section class="run-section"><h2 id="files-h">Files</h2>{{if .Files}}<table class="table" id="files"><thead><tr><th scope="col">Path</th><th scope="col" class="num">Size</th><th scope="col">Modified</th></tr></thead><tbody>
{{range .Files}}<tr><td><a href="{{.Href}}">{{.Path}}</a></td><td class="num" title="{{.Bytes}} bytes">{{.Size}}</td><td>{{.Modified}}</td></tr>{{end}}</tbody></table>
{{else}}<p id="files" class="empty">The run folder has no saved files yet.</p>{{end}}</section>
{{with .Screen}}<section class="run-section"><h2 id="computer-h">Computer</h2>{{if .Takeover}}<p>The run's screen is <a href="#screen">at the top</a>: the agent handed it to you.</p>{{else}}{{template "screen" $}}{{end}}</section>{{end}}
{{if .Tree}}<section class="run-section"><h2 id="tree-h">Tree</h2><table class="table" id="workflow-tree"><thead><tr><th scope="col">Node</th><th scope="col">Kind</th><th scope="col">State</th><th scope="col">Value</th><th scope="col">Cost</th><th scope="col" class="num">Steps</th></tr></thead><tbody>
{{range .Tree}}<tr data-key="{{.Key}}" data-state="{{.State}}"><td class="depth-{{if lt .Depth 9}}{{.Depth}}{{else}}deep{{end}}" title="{{.Key}}">{{.Label}}</td><td>{{.Kind}}</td><td class="node-{{.State}}">{{.State}}</td><td>{{.Value}}</td><td>{{.Cost}}</td><td class="num">{{.Steps}}</td></tr>{{end}}</tbody></table></section>{{end}}
{{with .Learning}}<section class="run-section">{{template "learning" .}}</section>{{end}}
<section class="run-section"><h2 id="raw-h">Raw</h2><p class="help">The run as <code>GET /v2/agentruns/{{.Run.Metadata.Name}}</code> returns it; each step's JSON is in the Timeline's table.</p>
<details class="raw-json"><summary>The run's JSON</summary><pre class="json" tabindex="0">{{.JSON}}</pre></details></section>
</div>`

// screenBody is the run's Screen (screen.go): at the top while the agent hands it to the
// person, else in the Computer section.
const screenBody = `{{define "screen"}}{{with .Screen}}<div id="screen"{{if .Takeover}} class="card needs wait"{{end}} data-control="{{.Control}}" data-csrf="{{$.CSRF}}">
<h2>Screen{{if .Control}}: the agent handed you its {{.What}}{{end}}</h2>
{{if .Live}}<p id="screen-about">{{if .Control}}Click on the screen to click there in the run's {{.What}}; type into the field in focus with the box below.
When you are done, <b>answer the run's question below</b>: that hands the {{.What}} back to the agent.{{else}}The run's {{.What}}, live. You get the controls when the agent asks you to take over.{{end}}</p>
{{if .Control}}<form id="screen-type"><label for="screen-text" class="sr-only">Text to type into the {{.What}}</label><input id="screen-text" autocomplete="off" size="40" placeholder="text to type into the {{.What}}"> <button type="submit" class="button">Type</button>
{{range $.Keys}} <button type="button" class="button small" data-key="{{.Key}}">{{.Label}}</button>{{end}}</form>{{end}}
<p><img id="screen-img" src="/runs/{{$.Run.Metadata.Name}}/screen.jpg" class="screen-img{{if .Control}} control{{end}}" alt="the screen of the run's {{.What}}"></p>
<p id="screen-note" class="live"></p><p id="screen-state" class="note wait" hidden></p><noscript><p>The screen stays still and takes no clicks without JavaScript.</p></noscript>
{{else}}<p id="screen-away">{{.Why}}{{if .Takeover}} You can still answer the run's question below; the agent then goes on without the takeover.{{end}}</p>{{end}}
</div>{{end}}{{end}}`

// stepRef is what a step's actions need: the run, the step's key and state, the form token.
type stepRef struct {
	Run, Key string
	State    api.StepState
	CSRF     string
}

var runTmpl = newPage("run", forkAction+screenBody+runBody, runFuncs, template.FuncMap{
	"stepOf":  func(run, key string, state api.StepState, csrf string) stepRef { return stepRef{run, key, state, csrf} },
	"runPill": runPill,
})
