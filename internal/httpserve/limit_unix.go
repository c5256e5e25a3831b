//go:build unix

package httpserve

import "syscall"

// openFileLimit is the process's soft limit on open files (0 when unknown).
func openFileLimit() int {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) != nil || l.Cur > 1<<30 {
		return 0
	}
	return int(l.Cur)
}
