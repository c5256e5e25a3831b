//go:build linux

package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// selfCPU is this process's user+system CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// postgresCPU is the CPU time (user+system, with that of reaped children) of every process named
// postgres on this host (the same measure as agentrun's bench).
func postgresCPU() time.Duration {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var total time.Duration
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i, j := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if i < 0 || j < i || s[i+1:j] != "postgres" {
			continue
		}
		f := strings.Fields(s[j+1:])
		if len(f) < 15 {
			continue
		}
		for _, k := range []int{11, 12, 13, 14} { // utime, stime, cutime, cstime
			if v, err := strconv.ParseInt(f[k], 10, 64); err == nil {
				total += time.Duration(v) * time.Second / 100
			}
		}
	}
	return total
}
