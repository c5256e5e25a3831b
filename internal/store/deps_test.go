package store

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoHTTPInTheStore fails when the store (or a package it imports, such as api) pulls in
// net/http again: the store's rules refuse with a *RuleError, and only the server maps that to
// an HTTP status.
func TestNoHTTPInTheStore(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go tool to list the package's dependencies: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed %d packages: %q", len(deps), out)
	}
	for _, d := range deps {
		if d == "net/http" {
			t.Error("internal/store depends on net/http")
		}
	}
}
