package console

import (
	"fmt"
	"html/template"
	"strings"

	"agentrun.dev/agentrun/internal/cost"
)

// Charts drawn on the server as SVG: each is an <svg role="img"> named by what it shows, with the
// same numbers in a table behind "Show as table". Geometry is SVG attributes, colour CSS classes
// (the CSP forbids style attributes). An unknown cost is never drawn as $0: a bar whose costs are
// all unknown is a dashed outline labelled "unknown", one with some unknown is drawn at its known
// part and labelled "at least".

// Bar is one bar of a bar chart.
type Bar struct {
	Label string
	// Tick, when set, is the shorter label under the bar ("19" for "Nov 19"); the table has Label.
	Tick   string
	Micros cost.Micros // the known part
	// Unknown: none of it could be priced; Partial: some of it could not (Micros is a floor).
	Unknown, Partial bool
	// Count is how many runs it sums (shown in the table).
	Count int
}

// Text is the bar's amount as words.
func (b Bar) Text() string {
	switch {
	case b.Unknown:
		return "unknown"
	case b.Partial:
		return "at least $" + b.Micros.String()
	}
	return "$" + b.Micros.String()
}

// CapRow is one bar of a spend-against-cap chart.
type CapRow struct {
	Label   string
	Spent   cost.Micros
	Cap     cost.Micros // 0: no cap
	Partial bool        // some spend could not be priced: Spent is a floor
	Href    string
}

// Text is the spend as words.
func (c CapRow) Text() string {
	s := "$" + c.Spent.String()
	if c.Partial {
		s = "at least " + s
	}
	if c.Cap > 0 {
		s += " of $" + c.Cap.String()
	}
	return s
}

func chartID(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	return "chart-" + strings.TrimSuffix(b.String(), "-")
}

var esc = template.HTMLEscapeString

// barChart draws bars (vertical, one per label: days, say) named name.
func barChart(name string, bars []Bar) template.HTML {
	const w, h, top, bottom, left = 480.0, 180.0, 14.0, 26.0, 52.0
	var max cost.Micros
	for _, b := range bars {
		if b.Micros > max {
			max = b.Micros
		}
	}
	id := chartID(name)
	var s strings.Builder
	fmt.Fprintf(&s, `<figure class="chart" id="%s"><figcaption class="chart-title" aria-hidden="true">%s</figcaption><svg role="img" aria-labelledby="%s-t" viewBox="0 0 %g %g" class="chart-svg" preserveAspectRatio="xMidYMid meet"><title id="%s-t">%s</title>`, id, esc(name), id, w, h, id, esc(name))
	plotH := h - top - bottom
	// The axis: zero and the maximum.
	fmt.Fprintf(&s, `<line class="axis" x1="%g" y1="%g" x2="%g" y2="%g"/>`, left, h-bottom, w, h-bottom)
	fmt.Fprintf(&s, `<text class="tick" x="%g" y="%g" text-anchor="end">$0</text>`, left-6, h-bottom+4)
	if max > 0 {
		fmt.Fprintf(&s, `<line class="grid" x1="%g" y1="%g" x2="%g" y2="%g"/><text class="tick" x="%g" y="%g" text-anchor="end">%s</text>`,
			left, top, w, top, left-6, top+4, esc(shortUSD(max)))
	}
	n := len(bars)
	if n > 0 {
		slot := (w - left) / float64(n)
		bw := slot * 0.7
		for i, b := range bars {
			x := left + float64(i)*slot + (slot-bw)/2
			if b.Unknown {
				fmt.Fprintf(&s, `<rect class="bar unknown" x="%.1f" y="%.1f" width="%.1f" height="%.1f"/><text class="bar-note" x="%.1f" y="%.1f" text-anchor="middle">?</text>`,
					x, top, bw, plotH, x+bw/2, h-bottom-6)
			} else if b.Micros > 0 {
				bh := plotH * float64(b.Micros) / float64(max)
				bh = maxf(bh, 1)
				cls := "bar"
				if b.Partial {
					cls = "bar partial"
				}
				fmt.Fprintf(&s, `<rect class="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s: %s</title></rect>`, cls, x, h-bottom-bh, bw, bh, esc(b.Label), esc(b.Text()))
				if b.Partial {
					fmt.Fprintf(&s, `<text class="bar-note" x="%.1f" y="%.1f" text-anchor="middle">+?</text>`, x+bw/2, h-bottom-bh-4)
				}
			}
			// Label every bar when few, else every other.
			tick := b.Tick
			if tick == "" {
				tick = b.Label
			}
			if n <= 16 || i%2 == 0 {
				fmt.Fprintf(&s, `<text class="tick" x="%.1f" y="%g" text-anchor="middle">%s</text>`, x+bw/2, h-8, esc(tick))
			}
		}
	}
	s.WriteString(`</svg>`)
	fmt.Fprintf(&s, `<details class="as-table"><summary>Show as table</summary><table class="table"><caption>%s</caption><thead><tr><th scope="col">When</th><th scope="col" class="num">Cost</th><th scope="col" class="num">Runs</th></tr></thead><tbody>`, esc(name))
	for _, b := range bars {
		fmt.Fprintf(&s, `<tr><td>%s</td><td class="num">%s</td><td class="num">%d</td></tr>`, esc(b.Label), esc(b.Text()), b.Count)
	}
	s.WriteString(`</tbody></table></details></figure>`)
	return template.HTML(s.String())
}

// capChart draws one horizontal bar per row with its cap marked.
func capChart(name string, rows []CapRow) template.HTML {
	const w, rowH, left, right = 480.0, 26.0, 96.0, 128.0
	h := rowH*float64(len(rows)) + 8
	var scale cost.Micros
	for _, r := range rows {
		scale = maxm(scale, maxm(r.Spent, r.Cap))
	}
	if scale == 0 {
		scale = 1
	}
	id := chartID(name)
	var s strings.Builder
	fmt.Fprintf(&s, `<figure class="chart" id="%s"><figcaption class="chart-title" aria-hidden="true">%s</figcaption><svg role="img" aria-labelledby="%s-t" viewBox="0 0 %g %g" class="chart-svg"><title id="%s-t">%s</title>`, id, esc(name), id, w, h, id, esc(name))
	plotW := w - left - right
	for i, r := range rows {
		y := 4 + float64(i)*rowH
		fmt.Fprintf(&s, `<text class="tick" x="%g" y="%.1f" text-anchor="end">%s</text>`, left-8, y+rowH/2+4, esc(trimLabel(r.Label, 14)))
		fmt.Fprintf(&s, `<rect class="track" x="%g" y="%.1f" width="%.1f" height="%.1f"/>`, left, y+6, plotW, rowH-12)
		bw := plotW * float64(r.Spent) / float64(scale)
		cls := "bar"
		if r.Cap > 0 && r.Spent >= r.Cap {
			cls = "bar over"
		} else if r.Partial {
			cls = "bar partial"
		}
		if r.Spent > 0 {
			fmt.Fprintf(&s, `<rect class="%s" x="%g" y="%.1f" width="%.1f" height="%.1f"><title>%s: %s</title></rect>`, cls, left, y+6, maxf(bw, 1), rowH-12, esc(r.Label), esc(r.Text()))
		}
		if r.Cap > 0 {
			cx := left + plotW*float64(r.Cap)/float64(scale)
			fmt.Fprintf(&s, `<line class="cap" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, cx, y+2, cx, y+rowH-2)
		}
		fmt.Fprintf(&s, `<text class="tick" x="%g" y="%.1f">%s</text>`, w-right+8, y+rowH/2+4, esc(r.Text()))
	}
	s.WriteString(`</svg>`)
	fmt.Fprintf(&s, `<details class="as-table"><summary>Show as table</summary><table class="table"><caption>%s</caption><thead><tr><th scope="col">What</th><th scope="col" class="num">Spent</th><th scope="col" class="num">Cap</th></tr></thead><tbody>`, esc(name))
	for _, r := range rows {
		spent := "$" + r.Spent.String()
		if r.Partial {
			spent = "at least " + spent
		}
		capText := "none"
		if r.Cap > 0 {
			capText = "$" + r.Cap.String()
		}
		label := esc(r.Label)
		if r.Href != "" {
			label = `<a href="` + esc(r.Href) + `">` + label + `</a>`
		}
		fmt.Fprintf(&s, `<tr><td>%s</td><td class="num">%s</td><td class="num">%s</td></tr>`, label, esc(spent), esc(capText))
	}
	s.WriteString(`</tbody></table></details></figure>`)
	return template.HTML(s.String())
}

// shortUSD is an axis label: "$1.20", "$0.0042".
func shortUSD(m cost.Micros) string {
	switch {
	case m >= 1_000_000:
		return fmt.Sprintf("$%.2f", float64(m)/1e6)
	case m >= 10_000:
		return fmt.Sprintf("$%.3f", float64(m)/1e6)
	}
	return fmt.Sprintf("$%.4f", float64(m)/1e6)
}

func trimLabel(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func maxf(a, b float64) float64 {
	if a > b {
		return a
	}
	return b
}

func maxm(a, b cost.Micros) cost.Micros {
	if a > b {
		return a
	}
	return b
}
