package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"sigs.k8s.io/yaml"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/cost"
	"agentrun.dev/agentrun/internal/humanjson"
)

// writeJSON writes v as indented JSON and a newline.
// Text is not HTML-escaped ("a > b", not "a \u003e b").
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeRaw writes a JSON document as "json" (indented) or "yaml".
func writeRaw(w io.Writer, raw []byte, format string) error {
	switch format {
	case "yaml":
		y, err := yaml.JSONToYAML(raw)
		if err != nil {
			return err
		}
		_, err = w.Write(y)
		return err
	default:
		var buf bytes.Buffer
		if err := json.Indent(&buf, []byte(humanjson.String(raw)), "", "  "); err != nil {
			return err
		}
		buf.WriteByte('\n')
		_, err := w.Write(buf.Bytes())
		return err
	}
}

// writeValue writes v as "json" or "yaml".
func writeValue(w io.Writer, v any, format string) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeRaw(w, b, format)
}

// checkOutput validates an -o value against the allowed formats.
func checkOutput(o string, allowed ...string) error {
	for _, a := range allowed {
		if o == a {
			return nil
		}
	}
	var names []string
	for _, a := range allowed {
		if a != "" { // "" is the default, named by the command's help
			names = append(names, a)
		}
	}
	return usageError("unknown output format %q: use one of %s", o, strings.Join(names, ", "))
}

// writeTable writes rows under a header, columns aligned with three spaces like kubectl.
func writeTable(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = cell(c)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// cell makes a value fit one table cell: no tabs or newlines, "<none>" when empty.
func cell(s string) string {
	if s == "" {
		return "<none>"
	}
	return strings.NewReplacer("\t", " ", "\r", " ", "\n", " ").Replace(s)
}

// truncate shortens s to at most n runes, ending with "..." when cut, on one line.
func truncate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	if n <= 3 {
		return string(r[:n])
	}
	return string(r[:n-3]) + "..."
}

// age renders how long ago t was, kubectl style: 42s, 5m12s, 37m, 3h15m, 20h, 3d4h, 45d, 2y.
func age(t *time.Time, now time.Time) string {
	if t == nil || t.IsZero() {
		return "<unknown>"
	}
	d := now.Sub(*t)
	if d < 0 {
		d = 0
	}
	s := int64(d / time.Second)
	m, h, days := s/60, s/3600, s/86400
	switch {
	case s < 120:
		return fmt.Sprintf("%ds", s)
	case m < 10:
		if s%60 == 0 {
			return fmt.Sprintf("%dm", m)
		}
		return fmt.Sprintf("%dm%ds", m, s%60)
	case h < 3:
		return fmt.Sprintf("%dm", m)
	case h < 8:
		if m%60 == 0 {
			return fmt.Sprintf("%dh", h)
		}
		return fmt.Sprintf("%dh%dm", h, m%60)
	case h < 48:
		return fmt.Sprintf("%dh", h)
	case days < 8:
		if h%24 == 0 {
			return fmt.Sprintf("%dd", days)
		}
		return fmt.Sprintf("%dd%dh", days, h%24)
	case days < 365*2:
		return fmt.Sprintf("%dd", days)
	}
	return fmt.Sprintf("%dy", days/365)
}

// Tables.

var agentHeader = []string{"NAME", "REVISION", "MODEL", "TOOLS", "AGE"}

func agentRows(items []api.Agent, wide bool, now time.Time) (header []string, rows [][]string) {
	header = agentHeader
	if wide {
		header = append(append([]string{}, agentHeader...), "HARNESS", "COMPUTER", "STATE")
	}
	for _, a := range items {
		// The tools its runs are offered (those its computer brings included), as the server says.
		tools := a.Status.Tools
		if tools == nil {
			tools = a.Spec.Tools
		}
		row := []string{a.Metadata.Name, fmt.Sprint(a.Status.Revision), modelOf(a.Spec.Model), strings.Join(tools, ","), age(a.Metadata.CreationTimestamp, now)}
		if wide {
			comp := ""
			if a.Spec.Computer != nil {
				comp = string(a.Spec.Computer.Kind)
				if a.Spec.Computer.Provider != "" {
					comp += "/" + a.Spec.Computer.Provider
				}
			}
			row = append(row, string(a.Spec.Harness), comp, a.Spec.State)
		}
		rows = append(rows, row)
	}
	return header, rows
}

// modelOf is the model an agent names, or how it is chosen.
func modelOf(m api.ModelSpec) string {
	switch {
	case m.Name != "":
		return m.Name
	case len(m.Families) > 0:
		return "auto(" + strings.Join(m.Families, ",") + ")"
	}
	return "auto"
}

var runHeader = []string{"NAME", "AGENT", "PHASE", "REASON", "COST", "AGE"}

func runRows(items []api.AgentRun, wide bool, now time.Time) (header []string, rows [][]string) {
	header = runHeader
	if wide {
		header = append(append([]string{}, runHeader...), "MODEL", "ANSWER")
	}
	for _, r := range items {
		row := []string{r.Metadata.Name, r.Spec.Agent, string(r.Status.Phase), string(r.Status.Reason), costOf(r.Status.Cost), age(r.Metadata.CreationTimestamp, now)}
		if wide {
			model := ""
			if n := len(r.Status.Turns); n > 0 {
				model = r.Status.Turns[n-1].Model
			}
			ans := ""
			if r.Status.Answer != nil {
				ans = truncate(r.Status.Answer.Preview, 40)
			}
			row = append(row, model, ans)
		}
		rows = append(rows, row)
	}
	return header, rows
}

func costOf(c *api.RunCost) string {
	if c == nil {
		return ""
	}
	return cost.Dollars(c.TotalUSD)
}

var stepHeader = []string{"SEQ", "KEY", "KIND", "STATE", "ATTEMPT", "TITLE"}

func stepRows(steps []api.Step) [][]string {
	rows := make([][]string, 0, len(steps))
	for _, s := range steps {
		state := string(s.State)
		if s.Resolution != "" {
			state += "(" + string(s.Resolution) + ")"
		}
		if s.CopiedFrom != "" {
			state += "(copied)" // from the run a fork was made of
		}
		rows = append(rows, []string{fmt.Sprint(s.Seq), s.Key, string(s.Kind), state, fmt.Sprint(s.Attempt), truncate(s.Title, 60)})
	}
	return rows
}

var nodeHeader = []string{"NODE", "KIND", "STATE", "VALUE", "COST", "STEPS"}

// nodeRows is a workflow run's node tree as table rows, each node indented under its parent.
func nodeRows(root *api.WorkflowNode) [][]string {
	var rows [][]string
	var walk func(n *api.WorkflowNode, depth int)
	walk = func(n *api.WorkflowNode, depth int) {
		label := n.Label
		if label == "" {
			label = n.Kind
		}
		c := "-"
		if n.CostMicros != 0 || n.CostUnknown > 0 {
			c = cost.Dollars(cost.Total{Known: cost.Micros(n.CostMicros), Unknown: n.CostUnknown}.String())
		}
		rows = append(rows, []string{strings.Repeat("  ", depth) + label, n.Kind, n.State, truncate(n.Value, 50), c, fmt.Sprint(n.Steps)})
		for _, ch := range n.Children {
			walk(ch, depth+1)
		}
	}
	walk(root, 0)
	return rows
}

// genericRows makes a table of objects this CLI has no Go type for (AgentGroups and others) from
// their JSON: NAME, then PHASE, RUNS, ACTIVE and COST for groups, and AGE.
func genericRows(items []map[string]any, group bool, now time.Time) (header []string, rows [][]string) {
	if group {
		header = []string{"NAME", "AGENT", "PHASE", "RUNS", "ACTIVE", "COST", "AGE"}
	} else {
		header = []string{"NAME", "AGE"}
	}
	for _, it := range items {
		name := str(lookup(it, "metadata", "name"))
		var created *time.Time
		if ts, err := time.Parse(time.RFC3339, str(lookup(it, "metadata", "creationTimestamp"))); err == nil {
			created = &ts
		}
		if !group {
			rows = append(rows, []string{name, age(created, now)})
			continue
		}
		counts, _ := lookup(it, "status", "counts").(map[string]any)
		total, succeeded := 0.0, num(counts["succeeded"])
		for _, v := range counts {
			total += num(v)
		}
		runs := ""
		if counts != nil {
			runs = fmt.Sprintf("%d/%d", int64(succeeded), int64(total))
		}
		active := ""
		if v, ok := counts["active"]; ok {
			active = fmt.Sprint(int64(num(v)))
		}
		cost := ""
		if t := str(lookup(it, "status", "cost", "totalUSD")); t != "" {
			cost = costOf(&api.RunCost{TotalUSD: t})
		}
		rows = append(rows, []string{name, str(lookup(it, "spec", "agent")), str(lookup(it, "status", "phase")), runs, active, cost, age(created, now)})
	}
	return header, rows
}

func lookup(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func str(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	return jsonText(v)
}

func num(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case json.Number:
		f, _ := x.Float64()
		return f
	}
	return 0
}
