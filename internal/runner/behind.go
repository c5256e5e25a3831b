package runner

import (
	"math"
	rtmetrics "runtime/metrics"
	"time"

	"agentrun.dev/agentrun/internal/metrics"
)

// behind reports whether the runner should take no new runs for now, so that queued runs wait in
// the queue (for another runner, or for this one once it caught up) instead of slowing every run
// it drives; it logs once when it starts holding back and once when it stops. It is behind when
//   - the p99 of its goroutines' scheduling latency is over MaxLag (50 ms): runnable goroutines
//     wait that long for a CPU, so every step of every run it drives waits too (the goal for a
//     step's added latency is 50 ms at p99), and more runs make it worse. It catches up under
//     half of MaxLag, so that a lag hovering at the line does not start and stop it at every
//     reading; or
//   - its last lease renewal took over half its bound (min(RenewEvery, LeaseTTL/6)): a renewal
//     that does not finish in its bound leaves the runs it did not reach to self-fence, so past
//     half of it the runner is one slowdown from losing runs. The next renewal within half its
//     bound catches up. This one sees a slow store, which scheduling latency does not.
//
// A runner driving fewer runs than one claim takes is never behind: whatever slows the machine
// (another process on it too), queued runs must run somewhere, and so few runs are not what slows
// it; holding back there would leave a runner on a busy machine driving one run at a time.
func (r *Runner) behind() bool {
	r.mu.Lock()
	active := len(r.active)
	r.mu.Unlock()
	lag := r.Lag()
	metrics.SchedLatency.Set(lag.Seconds())
	slow := r.renewSlow.Load()
	lagOver := r.MaxLag > 0 && lag > r.MaxLag
	lagUnder := r.MaxLag <= 0 || lag <= r.MaxLag/2
	was := r.holding
	switch {
	case active < claimBatch:
		r.holding = false
	case lagOver || slow:
		r.holding = true
	case lagUnder:
		r.holding = false
	}
	switch {
	case r.holding && !was:
		r.holdingFrom = time.Now()
		metrics.HoldingBack.Set(1)
		r.Log.Warn("runner is behind: claiming no new runs until it catches up", "sched_latency_p99", lag.Round(time.Microsecond), "max_lag", r.MaxLag, "renewal_slow", slow, "active", active)
	case !r.holding && was:
		metrics.HoldingBack.Set(0)
		r.Log.Info("runner caught up: claiming runs again", "sched_latency_p99", lag.Round(time.Microsecond), "held_back", time.Since(r.holdingFrom).Round(time.Millisecond), "active", active)
	}
	return r.holding
}

// schedLag measures this process's scheduling lag: the p99 of the time goroutines waited
// runnable before they ran (runtime/metrics /sched/latencies:seconds), over the window since its
// previous reading. A window is at least a second long, so it holds enough scheduling events for
// a p99; a reading sooner returns the last window's. Only the claim loop reads it.
type schedLag struct {
	sample []rtmetrics.Sample
	prev   []uint64
	at     time.Time
	last   time.Duration
}

// minSchedEvents is the fewest scheduling events (the runtime records about one in eight) a
// window needs for its p99 to count: fewer is a nearly idle process, whose p99 would be one
// outlier.
const minSchedEvents = 100

func (s *schedLag) read() time.Duration {
	now := time.Now()
	if !s.at.IsZero() && now.Sub(s.at) < time.Second {
		return s.last
	}
	if s.sample == nil {
		s.sample = []rtmetrics.Sample{{Name: "/sched/latencies:seconds"}}
	}
	rtmetrics.Read(s.sample)
	if s.sample[0].Value.Kind() != rtmetrics.KindFloat64Histogram {
		return 0 // not measured by this Go runtime
	}
	h := s.sample[0].Value.Float64Histogram()
	lag := time.Duration(0)
	if len(s.prev) == len(h.Counts) { // else this is the first reading: the window starts here
		lag = p99(h, s.prev)
	}
	s.prev = append(s.prev[:0], h.Counts...)
	s.at, s.last = now, lag
	return lag
}

// p99 returns the upper bound of the bucket holding the 99th percentile of h's counts less prev
// (the lower bound for the last, unbounded bucket), or 0 below minSchedEvents.
func p99(h *rtmetrics.Float64Histogram, prev []uint64) time.Duration {
	var total uint64
	for i, c := range h.Counts {
		total += c - prev[i]
	}
	if total < minSchedEvents {
		return 0
	}
	want := total - total/100 // the events at or under the p99
	var seen uint64
	for i, c := range h.Counts {
		if seen += c - prev[i]; seen >= want {
			b := h.Buckets[i+1]
			if math.IsInf(b, 1) {
				b = h.Buckets[i]
			}
			return time.Duration(b * float64(time.Second))
		}
	}
	return 0
}
