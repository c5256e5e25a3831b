// Package metrics owns the process's Prometheus metrics: a small registry of counters, gauges and
// histograms (with labels) and their text exposition format for /metrics. It is deliberately tiny:
// the server needs a dozen series, not a client library.
package metrics

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"sync"
	"time"
)

// Registry holds metric families.
type Registry struct {
	mu       sync.Mutex
	families []family
}

type family interface {
	name() string
	write(w io.Writer)
}

// Default is the process-wide registry.
var Default = &Registry{}

func (r *Registry) add(f family) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.families = append(r.families, f)
}

// Write writes every family in the Prometheus text format.
func (r *Registry) Write(w io.Writer) {
	r.mu.Lock()
	fs := append([]family{}, r.families...)
	r.mu.Unlock()
	sort.Slice(fs, func(i, j int) bool { return fs[i].name() < fs[j].name() })
	for _, f := range fs {
		f.write(w)
	}
}

func labelKey(names, values []string) string {
	if len(names) != len(values) {
		panic(fmt.Sprintf("metrics: %d label values for %d labels", len(values), len(names)))
	}
	// Called on every observation: one builder, and the escaper made once.
	var b strings.Builder
	for i := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(names[i])
		b.WriteString(`="`)
		labelEscaper.WriteString(&b, values[i])
		b.WriteByte('"')
	}
	return b.String()
}

// labelEscaper escapes a label value for the Prometheus text format.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func braces(s string) string {
	if s == "" {
		return ""
	}
	return "{" + s + "}"
}

// Vec is a counter or gauge family with labels.
type Vec struct {
	n, help, typ string
	labels       []string
	mu           sync.Mutex
	values       map[string]float64
}

// NewCounter registers a counter family.
func (r *Registry) NewCounter(name, help string, labels ...string) *Vec {
	v := &Vec{n: name, help: help, typ: "counter", labels: labels, values: map[string]float64{}}
	r.add(v)
	return v
}

// NewGauge registers a gauge family.
func (r *Registry) NewGauge(name, help string, labels ...string) *Vec {
	v := &Vec{n: name, help: help, typ: "gauge", labels: labels, values: map[string]float64{}}
	r.add(v)
	return v
}

// Add adds d to the series with these label values.
func (v *Vec) Add(d float64, values ...string) {
	k := labelKey(v.labels, values)
	v.mu.Lock()
	v.values[k] += d
	v.mu.Unlock()
}

// Inc adds one.
func (v *Vec) Inc(values ...string) { v.Add(1, values...) }

// Set sets a gauge series.
func (v *Vec) Set(x float64, values ...string) {
	k := labelKey(v.labels, values)
	v.mu.Lock()
	v.values[k] = x
	v.mu.Unlock()
}

// SetAll replaces every series at once with those fill sets (for gauges recomputed at each
// collection): a collection running at the same time writes the old set or the new one, never a
// half-filled one (as a Reset followed by Sets let two scrapes do).
func (v *Vec) SetAll(fill func(set func(x float64, values ...string))) {
	next := map[string]float64{}
	fill(func(x float64, values ...string) { next[labelKey(v.labels, values)] = x })
	v.mu.Lock()
	v.values = next
	v.mu.Unlock()
}

func (v *Vec) name() string { return v.n }

func (v *Vec) write(w io.Writer) {
	v.mu.Lock()
	defer v.mu.Unlock()
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", v.n, v.help, v.n, v.typ)
	keys := make([]string, 0, len(v.values))
	for k := range v.values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "%s%s %s\n", v.n, braces(k), num(v.values[k]))
	}
}

func num(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return fmt.Sprintf("%d", int64(f))
	}
	return fmt.Sprintf("%g", f)
}

// Histogram is a histogram family with labels, in seconds.
type Histogram struct {
	n, help string
	labels  []string
	buckets []float64
	mu      sync.Mutex
	series  map[string]*hseries
}

type hseries struct {
	counts []uint64
	sum    float64
	count  uint64
}

// LatencyBuckets suit operations from a fraction of a millisecond to a minute.
var LatencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// NewHistogram registers a histogram family.
func (r *Registry) NewHistogram(name, help string, buckets []float64, labels ...string) *Histogram {
	h := &Histogram{n: name, help: help, labels: labels, buckets: buckets, series: map[string]*hseries{}}
	r.add(h)
	return h
}

// Observe records one value.
func (h *Histogram) Observe(x float64, values ...string) {
	k := labelKey(h.labels, values)
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.series[k]
	if s == nil {
		s = &hseries{counts: make([]uint64, len(h.buckets))}
		h.series[k] = s
	}
	for i, b := range h.buckets {
		if x <= b {
			s.counts[i]++
		}
	}
	s.sum += x
	s.count++
}

// Since records the time since start.
func (h *Histogram) Since(start time.Time, values ...string) {
	h.Observe(time.Since(start).Seconds(), values...)
}

func (h *Histogram) name() string { return h.n }

func (h *Histogram) write(w io.Writer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s histogram\n", h.n, h.help, h.n)
	keys := make([]string, 0, len(h.series))
	for k := range h.series {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s := h.series[k]
		sep := ""
		if k != "" {
			sep = ","
		}
		for i, b := range h.buckets {
			fmt.Fprintf(w, "%s_bucket{%s%sle=\"%g\"} %d\n", h.n, k, sep, b, s.counts[i])
		}
		fmt.Fprintf(w, "%s_bucket{%s%sle=\"+Inf\"} %d\n", h.n, k, sep, s.count)
		fmt.Fprintf(w, "%s_sum%s %g\n%s_count%s %d\n", h.n, braces(k), s.sum, h.n, braces(k), s.count)
	}
}

// The process's metrics (docs/architecture.md, "Observability"): runs by phase, claims,
// renewals, takeovers, step, model call and journal write latencies.
var (
	RunsByPhase     = Default.NewGauge("agentrun_runs", "Runs by phase (from the store).", "phase")
	Claims          = Default.NewCounter("agentrun_claims_total", "Runs claimed by this process's runner.")
	Takeovers       = Default.NewCounter("agentrun_takeovers_total", "Runs claimed after another holder's lease ran out or was given back mid-run.")
	LeaseRenewals   = Default.NewCounter("agentrun_lease_renewals_total", "Lease renewals by outcome.", "outcome")
	LeasesLost      = Default.NewCounter("agentrun_leases_lost_total", "Leases lost to fencing or self-fencing.", "why")
	RunsActive      = Default.NewGauge("agentrun_runner_active_runs", "Runs this process's runner is driving.")
	StepSeconds     = Default.NewHistogram("agentrun_step_seconds", "Duration of journal steps (effect included), by kind.", LatencyBuckets, "kind")
	ModelSeconds    = Default.NewHistogram("agentrun_model_call_seconds", "Duration of model calls, by provider.", LatencyBuckets, "provider")
	JournalSeconds  = Default.NewHistogram("agentrun_journal_write_seconds", "Time a drive waited for its fenced journal commits (a write sent ahead counts once, when it is waited for or joined).", LatencyBuckets)
	StepsReplayed   = Default.NewCounter("agentrun_steps_replayed_total", "Completed steps answered from the journal on replay.")
	StepsInterrupts = Default.NewCounter("agentrun_steps_interrupted_total", "Steps found interrupted (after a crash, or their computer died under them), by what happened next.", "outcome")
	// A vendor reply whose usage prices above the worst case reserved for its call: charged at the
	// reservation, the excess recorded here and on the run's timeline (cost.discrepancy).
	CostDiscrepancies     = Default.NewCounter("agentrun_cost_discrepancies_total", "Model calls whose reported usage priced above the worst case reserved for them (charged at the reservation).")
	CostDiscrepancyMicros = Default.NewCounter("agentrun_cost_discrepancy_micros_total", "Micro-dollars of reported usage above the reservations, not charged.")
	// A harness's token count (count_tokens) through the gateway: answered by the vendor or, for
	// a count asked again after a restart, from the journal.
	GatewayCounts = Default.NewCounter("agentrun_gateway_counts_total", "Token counts harnesses asked the gateway for, by provider and by who answered (vendor or journal).", "provider", "outcome")
)

// What the runner's hold-back (runner.go, behind) decides on, and its decision.
var (
	SchedLatency = Default.NewGauge("agentrun_runner_sched_latency_seconds", "p99 of the runner process's goroutine scheduling latency over the last second or more.")
	HoldingBack  = Default.NewGauge("agentrun_runner_holding_back", "1 while the runner claims no new runs because it is behind (scheduling latency over --max-lag, or its last lease renewal slow), else 0.")
	RenewSeconds = Default.NewHistogram("agentrun_lease_renewal_seconds", "Duration of a runner's renewal of all the leases it holds.", LatencyBuckets)
)
