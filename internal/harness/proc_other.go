//go:build !linux

package harness

import "syscall"

// sysProcAttr puts the harness in its own process group (killed as one).
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
