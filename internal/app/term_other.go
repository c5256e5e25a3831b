//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd

package app

// isTerminal: elsewhere serve never opens a browser by itself.
func isTerminal(fd int) bool { return false }
