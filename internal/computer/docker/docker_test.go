package docker

import (
	"context"
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/computer"
)

func TestUnavailableWithReason(t *testing.T) {
	p := &Provider{Host: "unix:///nonexistent/docker.sock"}
	a := p.Available(context.Background())
	if a.Available || !strings.Contains(a.Reason, "no Docker engine reachable") {
		t.Fatalf("availability %+v", a)
	}
	if _, err := p.Create(context.Background(), computer.Spec{Kind: computer.KindSandbox, Folder: t.TempDir()}); err == nil {
		t.Fatal("Create worked without an engine")
	}
}
