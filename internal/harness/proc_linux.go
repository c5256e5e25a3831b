package harness

import "syscall"

// sysProcAttr puts the harness in its own process group (killed as one) and has the kernel kill it
// when the runner dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
