package trigger

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/template"
	"time"

	"agentrun.dev/agentrun/internal/api"
)

// MaxInput bounds a rendered input (a run's input is at most 256 KiB).
const MaxInput = 256 << 10

// ParseInput parses spec.input as a Go text/template whose missing keys are errors.
func ParseInput(text string) (*template.Template, error) {
	return template.New("input").Option("missingkey=error").Parse(text)
}

// Render renders spec.input over an event. An empty input is the event as indented JSON. A key
// the event lacks is an error (never "<no value>").
func Render(text string, event map[string]any) (string, error) {
	if strings.TrimSpace(text) == "" {
		b, err := json.MarshalIndent(event, "", "  ")
		if err != nil {
			return "", err
		}
		return string(b), nil
	}
	t, err := ParseInput(text)
	if err != nil {
		return "", err
	}
	// Bounded as it renders: nested ranges over a delivery's lists multiply, and a template of a
	// few lines can expand to gigabytes before any check after the fact.
	w := &limitedWriter{max: MaxInput}
	if err := t.Execute(w, event); err != nil {
		return "", err
	}
	return w.buf.String(), nil
}

// errInputTooLarge is the write that would take a rendered input past MaxInput (text/template
// stops at a write's error and returns it as it is).
var errInputTooLarge = fmt.Errorf("the rendered input is over the %d bytes (256 KiB) a run takes", MaxInput)

// limitedWriter keeps at most max bytes and fails the write that would pass them.
type limitedWriter struct {
	buf bytes.Buffer
	max int
}

func (w *limitedWriter) Write(p []byte) (int, error) {
	if w.buf.Len()+len(p) > w.max {
		return 0, errInputTooLarge
	}
	return w.buf.Write(p)
}

// ScheduleEvent is what a schedule's input renders over: scheduledTime (RFC 3339 in the
// trigger's zone) and trigger.
func ScheduleEvent(name string, slot time.Time, loc *time.Location) map[string]any {
	if loc == nil {
		loc = time.UTC
	}
	return map[string]any{"scheduledTime": slot.In(loc).Format(time.RFC3339), "trigger": name}
}

// WebhookEvent is what a webhook's input renders over: body (the JSON body, or its text when it
// is not JSON), webhookId, timestamp and trigger.
func WebhookEvent(name, id, timestamp string, body []byte) map[string]any {
	return map[string]any{"body": decodeBody(body), "webhookId": id, "timestamp": timestamp, "trigger": name}
}

// GitHubEvent is what a GitHub trigger's input renders over: the payload's own keys
// (pull_request, action, repository, ...) with githubEvent, githubDelivery and trigger added.
func GitHubEvent(name, event, delivery string, payload map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range payload {
		out[k] = v
	}
	out["githubEvent"], out["githubDelivery"], out["trigger"] = event, delivery, name
	return out
}

func decodeBody(body []byte) any {
	var v any
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := d.Decode(&v); err != nil || d.More() {
		return string(body)
	}
	return v
}

// GitHubPayload decodes a GitHub delivery's JSON object (numbers kept as written).
func GitHubPayload(body []byte) (map[string]any, error) {
	p, ok := decodeBody(body).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("a GitHub delivery's body is a JSON object")
	}
	return p, nil
}

// GitHubFilter says why a verified GitHub delivery does not fire the trigger ("" when it does):
// its event, its action or its repository is not one the trigger lists (an empty list takes all).
func GitHubFilter(g *api.TriggerGitHub, event string, payload map[string]any) string {
	if len(g.Events) > 0 && !slices.Contains(g.Events, event) {
		return fmt.Sprintf("event %q is not in spec.github.events", event)
	}
	if len(g.Actions) > 0 {
		action, _ := payload["action"].(string)
		if !slices.Contains(g.Actions, action) {
			return fmt.Sprintf("action %q is not in spec.github.actions", action)
		}
	}
	if len(g.Repositories) > 0 {
		repo, _ := payload["repository"].(map[string]any)
		full, _ := repo["full_name"].(string)
		if !slices.ContainsFunc(g.Repositories, func(r string) bool { return strings.EqualFold(r, full) }) {
			return fmt.Sprintf("repository %q is not in spec.github.repositories", full)
		}
	}
	return ""
}
