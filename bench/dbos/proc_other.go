//go:build !linux

package main

import "time"

func selfCPU() time.Duration { return 0 }

func postgresCPU() time.Duration { return 0 }
