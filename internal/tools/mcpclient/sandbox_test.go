package mcpclient

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/computer/local"
	"agentrun.dev/agentrun/internal/computer/sandboxhelper"
)

// TestMain: the sandboxes these tests start re-execute this test binary as their helper.
func TestMain(m *testing.M) {
	if code, ok := sandboxhelper.Main(os.Args[1:]); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// TestFilesystemInSandbox: the real server-filesystem started inside a local sandbox without
// network, its npm install mounted read-only (Mounts): it works in /workspace, which is the run
// folder on the host; its env reaches it and the runner's does not; and a host folder that exists
// outside the sandbox is not there for it (the same server given that folder starts on the runner
// and does not in the sandbox).
func TestFilesystemInSandbox(t *testing.T) {
	dir := npmServers(t)
	p := local.New()
	if a := p.Available(t.Context()); !a.Available {
		t.Skip(a.Reason)
	}
	index := filepath.Join(dir, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
	srv := api.MCPServer{Name: "files", Command: "node", Args: []string{index, "."}, Env: map[string]string{"FROM_SPEC": "yes"}}
	dirs := Mounts(srv)
	if len(dirs) != 1 || dirs[0] != dir {
		t.Fatalf("mounts for %s: %+v, want %s", index, dirs, dir)
	}
	mounts := []computer.Mount{{Source: dirs[0], Target: dirs[0]}} // read-only, as the agent mounts them
	folder := t.TempDir()
	c, err := p.Create(t.Context(), computer.Spec{Run: "mcp-sandbox", Folder: folder, Kind: computer.KindSandbox, Mounts: mounts})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sp := spawnIn(c.(computer.Spawner))
	ctx := context.Background()
	t.Setenv("AGENTRUN_RUNNER_SECRET", "runner-only")
	s, err := ConnectIn(ctx, "spec.mcpServers[0]", srv, sp, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Call(ctx, "list_allowed_directories", nil)
	if err != nil || !strings.Contains(r.Content, "/workspace") || strings.Contains(r.Content, folder) {
		t.Errorf("allowed directories in the sandbox: %+v %v", r, err)
	}
	r, err = s.Call(ctx, "write_file", []byte(`{"path":"/workspace/note.txt","content":"from inside"}`))
	if err != nil || r.IsError {
		t.Fatalf("write_file: %+v %v", r, err)
	}
	if b, err := os.ReadFile(filepath.Join(folder, "note.txt")); err != nil || string(b) != "from inside" {
		t.Errorf("the run folder holds %q, %v", b, err)
	}
	// The server's process: its environment, seen from the sandbox.
	sb := c.(computer.Sandbox)
	res, err := sb.Exec(ctx, `for p in /proc/[0-9]*; do if tr '\0' ' ' < $p/cmdline 2>/dev/null | grep -q server-filesystem; then tr '\0' '\n' < $p/environ; fi; done`, computer.ExecOptions{})
	if err != nil || !strings.Contains(res.Stdout, "FROM_SPEC=yes") || strings.Contains(res.Stdout, "AGENTRUN_RUNNER_SECRET") || !strings.Contains(res.Stdout, "HOME=/home/agent") {
		t.Errorf("the server's environment in the sandbox: %q %v", res.Stdout, err)
	}
	if err := s.Close(); err != nil {
		t.Logf("close: %v", err)
	}

	// A host folder: there on the runner, not in the sandbox.
	hostOnly := t.TempDir()
	other := api.MCPServer{Name: "files", Command: "node", Args: []string{index, hostOnly}}
	on, err := Connect(ctx, "spec.mcpServers[0]", other, t.TempDir(), nil)
	if err != nil {
		t.Fatalf("on the runner: %v", err)
	}
	on.Close()
	if in, err := ConnectIn(ctx, "spec.mcpServers[0]", other, sp, nil); err == nil {
		in.Close()
		t.Fatalf("the server started in the sandbox with the host's %s as its folder", hostOnly)
	} else if !strings.Contains(err.Error(), hostOnly) {
		t.Errorf("its refusal does not name the folder: %v", err)
	}
	// A command the computer does not have.
	if _, err := ConnectIn(ctx, "spec.mcpServers[1]", api.MCPServer{Name: "gone", Command: "no-such-mcp-server"}, sp, nil); err == nil || !strings.Contains(err.Error(), "no-such-mcp-server") {
		t.Errorf("a missing command: %v", err)
	}
}

// spawnIn starts a server in sp, as internal/agent does.
func spawnIn(sp computer.Spawner) Spawn {
	return func(ctx context.Context, argv, env []string) (Process, error) {
		p, err := sp.Spawn(ctx, argv, computer.SpawnOptions{Env: env})
		if err != nil {
			return nil, err
		}
		return p, nil
	}
}
