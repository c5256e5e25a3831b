package main

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Dist summarizes a set of durations; the figures are milliseconds.
type Dist struct {
	N    int     `json:"n"`
	Mean float64 `json:"meanMs"`
	P50  float64 `json:"p50Ms"`
	P90  float64 `json:"p90Ms"`
	P99  float64 `json:"p99Ms"`
	Max  float64 `json:"maxMs"`
	Min  float64 `json:"minMs"`
}

func dist(ds []time.Duration) Dist {
	if len(ds) == 0 {
		return Dist{}
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return Dist{N: len(s), Mean: msf(sum / time.Duration(len(s))), P50: msf(pct(s, 50)), P90: msf(pct(s, 90)), P99: msf(pct(s, 99)),
		Max: msf(s[len(s)-1]), Min: msf(s[0])}
}

// pct is the nearest-rank percentile of sorted s.
func pct(s []time.Duration, p float64) time.Duration {
	k := int(float64(len(s))*p/100+0.999999) - 1
	if k < 0 {
		k = 0
	}
	if k >= len(s) {
		k = len(s) - 1
	}
	return s[k]
}

func msf(d time.Duration) float64 {
	return round3(float64(d) / float64(time.Millisecond))
}

// round3 keeps three decimals (microseconds, for milliseconds): all the precision the figures have.
func round3(v float64) float64 {
	return math.Round(v*1000) / 1000
}

func (d Dist) row(name string) string {
	if d.N == 0 {
		return fmt.Sprintf("  %-34s %6s\n", name, "-")
	}
	return fmt.Sprintf("  %-34s %6d %9.3f %9.3f %9.3f %9.3f %9.3f\n", name, d.N, d.P50, d.P90, d.P99, d.Max, d.Mean)
}

const distHeader = "  %-34s %6s %9s %9s %9s %9s %9s\n"

func printDistHeader(unit string) {
	fmt.Printf(distHeader, unit, "n", "p50", "p90", "p99", "max", "mean")
}
