//go:build !linux

package main

import "time"

func fsType(dir string) string { return "unknown" }

func selfCPU() time.Duration { return 0 }

func procCPU(pid int) (user, sys time.Duration, ok bool) { return 0, 0, false }

func postgresCPU() time.Duration { return 0 }
