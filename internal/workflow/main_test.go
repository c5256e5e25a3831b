package workflow

import (
	"os"
	"testing"
)

// TestMain runs the code child when the tests re-execute this binary for a code node (Main).
func TestMain(m *testing.M) {
	if code, ok := Main(os.Args[1:]); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}
