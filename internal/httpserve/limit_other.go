//go:build !unix

package httpserve

func openFileLimit() int { return 0 }
