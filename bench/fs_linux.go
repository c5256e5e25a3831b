//go:build linux

package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// fsType names the filesystem dir is on (its fsync cost is what the store pays per commit).
func fsType(dir string) string {
	var s syscall.Statfs_t
	if err := syscall.Statfs(dir, &s); err != nil {
		return "unknown"
	}
	switch uint64(s.Type) {
	case 0x01021994:
		return "tmpfs"
	case 0xEF53:
		return "ext4"
	case 0x58465342:
		return "xfs"
	case 0x9123683E:
		return "btrfs"
	case 0x794C7630:
		return "overlayfs"
	case 0x6969:
		return "nfs"
	case 0x65735546:
		return "fuse"
	case 0x01021997:
		return "9p"
	}
	return fmt.Sprintf("fs magic %#x", uint64(s.Type))
}

// selfCPU is this process's user+system CPU time so far (the client and the scripted model server).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU is another process's user and system CPU time so far, from /proc (10 ms resolution).
func procCPU(pid int) (user, sys time.Duration, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	// Fields after the command name (which may hold spaces) start at state (field 3).
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, 0, false
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64) // utime, field 14
	st, err2 := strconv.ParseInt(f[12], 10, 64) // stime, field 15
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	const clkTck = 100 // USER_HZ on every Linux architecture Go supports
	return time.Duration(ut) * time.Second / clkTck, time.Duration(st) * time.Second / clkTck, true
}

// postgresCPU is the CPU time (user+system, with that of reaped children) of every process named
// postgres on this host: a PostgreSQL server on the same machine. The postmaster's reaped
// children's time counts in its own, so a backend that exits does not make the sum go back.
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
