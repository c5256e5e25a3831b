package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// GET /agents/NAME/revisions/A..B: the change from revision A to revision B of an agent, as a
// line diff of each revision's spec in canonical YAML (sorted keys; the instructions a block of
// their own lines, so a changed sentence is one changed line). The diff is go-diff's line mode
// (Myers' algorithm, already in the module graph through go-git), which stays fast on long
// instructions where a plain LCS table would not.

// diffContext is how many unchanged lines are kept around a change; longer runs fold.
const diffContext = 3

// DiffLine is one line of a diff: Op is "+", "-" or " ", or "…" for folded unchanged lines
// (Text then says how many).
type DiffLine struct {
	Op, Text string
	// Old and New are the line's numbers in A and in B (0: not there).
	Old, New int
}

// lineDiff diffs a and b line by line, folding unchanged runs longer than 2*diffContext.
func lineDiff(a, b string) (lines []DiffLine, added, removed int) {
	dmp := diffmatchpatch.New()
	ca, cb, table := dmp.DiffLinesToChars(a, b)
	diffs := dmp.DiffCharsToLines(dmp.DiffMain(ca, cb, false), table)
	var all []DiffLine
	oldN, newN := 0, 0
	for _, d := range diffs {
		for _, l := range splitLines(d.Text) {
			switch d.Type {
			case diffmatchpatch.DiffEqual:
				oldN++
				newN++
				all = append(all, DiffLine{Op: " ", Text: l, Old: oldN, New: newN})
			case diffmatchpatch.DiffDelete:
				oldN++
				removed++
				all = append(all, DiffLine{Op: "-", Text: l, Old: oldN})
			case diffmatchpatch.DiffInsert:
				newN++
				added++
				all = append(all, DiffLine{Op: "+", Text: l, New: newN})
			}
		}
	}
	// Keep the unchanged lines within diffContext of a change.
	keep := make([]bool, len(all))
	for i, l := range all {
		if l.Op == " " {
			continue
		}
		for j := max(0, i-diffContext); j <= min(len(all)-1, i+diffContext); j++ {
			keep[j] = true
		}
	}
	for i := 0; i < len(all); {
		if keep[i] {
			lines = append(lines, all[i])
			i++
			continue
		}
		j := i
		for j < len(all) && !keep[j] {
			j++
		}
		lines = append(lines, DiffLine{Op: "…", Text: plural(j-i, "unchanged line")})
		i = j
	}
	return lines, added, removed
}

// splitLines splits s into its lines, without their line ends (a last line without one counts).
func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// parseSpan reads "A..B" (revision numbers of at least 1).
func parseSpan(span string) (a, b int64, err error) {
	as, bs, ok := strings.Cut(span, "..")
	if ok {
		a, err = strconv.ParseInt(as, 10, 64)
		if err == nil {
			b, err = strconv.ParseInt(bs, 10, 64)
		}
	}
	if !ok || err != nil || a < 1 || b < 1 {
		return 0, 0, errors.New("the revisions are written A..B, two revision numbers (like 1..2)")
	}
	return a, b, nil
}

func (c *Console) revisionDiff(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	a, b, err := parseSpan(r.PathValue("span"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ag, err := c.Store.GetAgent(r.Context(), name)
	if errors.Is(err, store.ErrNotFound) {
		http.Error(w, "no agent "+name, http.StatusNotFound)
		return
	} else if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	var specs [2]*api.AgentSpec
	for i, rev := range []int64{a, b} {
		if rev > ag.Status.Revision {
			http.Error(w, fmt.Sprintf("agent %s has no revision %d (its latest is %d)", name, rev, ag.Status.Revision), http.StatusNotFound)
			return
		}
		if specs[i], err = c.Store.GetAgentRevision(r.Context(), name, rev); errors.Is(err, store.ErrNotFound) {
			http.Error(w, fmt.Sprintf("agent %s has no revision %d", name, rev), http.StatusNotFound)
			return
		} else if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	lines, added, removed := lineDiff(canonicalYAML(specs[0]), canonicalYAML(specs[1]))
	base := "/agents/" + url.PathEscape(name)
	c.page(w, r, diffTmpl, Page{Title: fmt.Sprintf("Revision %d to %d", a, b), ID: "diff-title",
		Description: "What changed in agent " + name + "'s spec between the two revisions, line by line.",
		Crumbs:      []Crumb{{"Agents", "/agents"}, {name, base}},
		Data: map[string]any{"Agent": ag, "A": a, "B": b, "Lines": lines, "Added": added, "Removed": removed,
			"Prev": a - 1, "Next": b + 1, "HasNext": b < ag.Status.Revision}})
}

var diffTmpl = agentPageOf("revision-diff", `<p id="diff-summary">{{if or .Added .Removed}}{{.Added}} line{{if ne .Added 1}}s{{end}} added, {{.Removed}} removed in the spec (canonical YAML).{{else}}The two revisions' specs are the same.{{end}}
{{if gt .A 1}}<a href="/agents/{{pathEscape .Agent.Metadata.Name}}/revisions/{{.Prev}}..{{.A}}">Earlier change</a>{{end}}{{if .HasNext}} · <a href="/agents/{{pathEscape .Agent.Metadata.Name}}/revisions/{{.B}}..{{.Next}}">Later change</a>{{end}}</p>
<table id="diff" class="table diff"><caption>Lines removed are marked −, lines added +.</caption><thead><tr><th scope="col" class="num">{{.A}}</th><th scope="col" class="num">{{.B}}</th><th scope="col">Line</th></tr></thead><tbody>
{{range .Lines}}{{if eq .Op "…"}}<tr class="fold"><td></td><td></td><td><i>{{.Text}}</i></td></tr>
{{else}}<tr class="{{if eq .Op "+"}}add{{else if eq .Op "-"}}del{{else}}same{{end}}" data-op="{{.Op}}"><td class="num">{{if .Old}}{{.Old}}{{end}}</td><td class="num">{{if .New}}{{.New}}{{end}}</td><td><code class="diff-line">{{if eq .Op "+"}}<ins>+ {{.Text}}</ins>{{else if eq .Op "-"}}<del>− {{.Text}}</del>{{else}}  {{.Text}}{{end}}</code></td></tr>
{{end}}{{end}}</tbody></table>`)
