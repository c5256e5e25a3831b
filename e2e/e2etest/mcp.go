package e2etest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// MCPNPMServers returns a folder holding node_modules/@modelcontextprotocol/server-everything and
// server-filesystem at the pinned version: AGENTRUN_MCP_CACHE (which .ci/run fills) or, without
// it, a temporary folder this test installs them into with the machine's npm. It skips when npm
// cannot install them.
func MCPNPMServers(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("AGENTRUN_MCP_CACHE")
	if dir == "" {
		dir = t.TempDir()
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules/@modelcontextprotocol/server-filesystem/package.json")); err == nil {
		return dir
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed: the MCP servers from npm cannot be installed")
	}
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"agentrun-mcp-servers","private":true}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, ".npmrc"), []byte("omit-lockfile-registry-resolved=true\n"), 0o644)
	out, err := exec.Command("npm", "install", "--prefix", dir, "--no-audit", "--no-fund",
		"@modelcontextprotocol/server-everything@2026.8.31", "@modelcontextprotocol/server-filesystem@2026.8.31").CombinedOutput()
	if err != nil {
		t.Skipf("npm could not install the MCP servers (no registry reachable?): %v\n%s", err, out)
	}
	return dir
}

// RecordModel puts a recording proxy in front of the scripted model server: every request body
// as the vendor would get it.
func RecordModel(t *testing.T, e *Env) (url string, bodies func() [][]byte) {
	var mu sync.Mutex
	var got [][]byte
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, b)
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		e.Model.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	return proxy.URL, func() [][]byte {
		mu.Lock()
		defer mu.Unlock()
		return append([][]byte(nil), got...)
	}
}

// OfferedTools are the tool names of the first model request that carries marker.
func OfferedTools(t *testing.T, bodies [][]byte, marker string) []string {
	t.Helper()
	for _, b := range bodies {
		if !bytes.Contains(b, []byte(marker)) {
			continue
		}
		var req struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(b, &req); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range req.Tools {
			names = append(names, tl.Name)
		}
		return names
	}
	t.Fatalf("no model request carried %q", marker)
	return nil
}
