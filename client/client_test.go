package client

import (
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

// Discover tests change the environment, so they do not run in parallel.

func TestDiscoverFromDataFolder(t *testing.T) {
	home := t.TempDir()
	t.Setenv("AGENTRUN_HOME", home)
	t.Setenv("AGENTRUN_URL", "")
	t.Setenv("AGENTRUN_TOKEN", "")
	write(t, filepath.Join(home, "server.json"), `{"url": "http://127.0.0.1:7341/", "pid": 42}`)
	write(t, filepath.Join(home, "token"), "  secret-token\n")
	c, err := Discover()
	if err != nil {
		t.Fatal(err)
	}
	if c.BaseURL() != "http://127.0.0.1:7341" || c.token != "secret-token" {
		t.Fatalf("got url %q token %q", c.BaseURL(), c.token)
	}
	if c.serverFile != filepath.Join(home, "server.json") {
		t.Fatalf("serverFile = %q", c.serverFile)
	}
}

func TestDiscoverEnvironmentWins(t *testing.T) {
	home := t.TempDir()
	t.Setenv("AGENTRUN_HOME", home)
	t.Setenv("AGENTRUN_URL", "localhost:9000")
	t.Setenv("AGENTRUN_TOKEN", "env-token")
	write(t, filepath.Join(home, "server.json"), `{"url": "http://127.0.0.1:7341", "pid": 42}`)
	write(t, filepath.Join(home, "token"), "file-token")
	c, err := Discover()
	if err != nil {
		t.Fatal(err)
	}
	if c.BaseURL() != "http://localhost:9000" || c.token != "env-token" || c.serverFile != "" {
		t.Fatalf("got url %q token %q file %q", c.BaseURL(), c.token, c.serverFile)
	}
	c, err = DiscoverWith("https://example.com/v2/", "flag-token")
	if err != nil {
		t.Fatal(err)
	}
	if c.BaseURL() != "https://example.com" || c.token != "flag-token" {
		t.Fatalf("got url %q token %q", c.BaseURL(), c.token)
	}
}

func TestDiscoverNothing(t *testing.T) {
	t.Setenv("AGENTRUN_HOME", t.TempDir())
	t.Setenv("AGENTRUN_URL", "")
	t.Setenv("AGENTRUN_TOKEN", "")
	_, err := Discover()
	if !errors.Is(err, ErrNoServer) {
		t.Fatalf("err = %v, want ErrNoServer", err)
	}
	if !strings.Contains(err.Error(), "agentrun serve") || !strings.Contains(err.Error(), "AGENTRUN_URL") {
		t.Fatalf("unhelpful error: %v", err)
	}
}

func TestDiscoverNoToken(t *testing.T) {
	home := t.TempDir()
	t.Setenv("AGENTRUN_HOME", home)
	t.Setenv("AGENTRUN_URL", "")
	t.Setenv("AGENTRUN_TOKEN", "")
	write(t, filepath.Join(home, "server.json"), `{"url": "http://127.0.0.1:7340"}`)
	c, err := Discover()
	if err != nil {
		t.Fatal(err)
	}
	if c.token != "" {
		t.Fatalf("token = %q", c.token)
	}
}

func TestRediscover(t *testing.T) {
	home := t.TempDir()
	t.Setenv("AGENTRUN_HOME", home)
	t.Setenv("AGENTRUN_URL", "")
	file := filepath.Join(home, "server.json")
	write(t, file, `{"url": "http://127.0.0.1:7340"}`)
	c, err := Discover()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.rediscover(c.BaseURL()); ok {
		t.Fatal("rediscover reported a change when there was none")
	}
	write(t, file, `{"url": "http://127.0.0.1:7342"}`)
	if u, ok := c.rediscover(c.BaseURL()); !ok || u != "http://127.0.0.1:7342" || c.BaseURL() != u {
		t.Fatalf("rediscover = %q, %v; base %q", u, ok, c.BaseURL())
	}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestNormalizeURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"http://127.0.0.1:7340":      "http://127.0.0.1:7340",
		"http://127.0.0.1:7340/":     "http://127.0.0.1:7340",
		"127.0.0.1:7340":             "http://127.0.0.1:7340",
		"https://x.example/v2":       "https://x.example",
		" https://x.example/base/ ":  "https://x.example/base",
		"":                           "",
		"https://x.example/base/v2/": "https://x.example/base",
	} {
		if got := normalizeURL(in); got != want {
			t.Errorf("normalizeURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEscapePath(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"region.md":         "region.md",
		"/docs/a b.md":      "docs/a%20b.md",
		"dir/sub/x?y#z.txt": "dir/sub/x%3Fy%23z.txt",
	} {
		if got := escapePath(in); got != want {
			t.Errorf("escapePath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDecodeError(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name                 string
		status               int
		body                 string
		code, message, field string
	}{
		{"json", 409, `{"code":"AgentRunFinished","message":"run x has finished","field":""}`, "AgentRunFinished", "run x has finished", ""},
		{"field", 422, `{"code":"UnknownField","message":"unknown field \"foo\"","field":"spec.foo"}`, "UnknownField", `unknown field "foo"`, "spec.foo"},
		{"text", 404, "404 page not found\n", "NotFound", "404 page not found", ""},
		{"empty", 502, "", "Internal", "Bad Gateway", ""},
		{"teapot", 418, "", "HTTP418", "I'm a teapot", ""},
		{"unauthorized", 401, `{"message":"bad token"}`, "Unauthorized", "bad token", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp := &http.Response{StatusCode: tc.status, Body: io.NopCloser(strings.NewReader(tc.body))}
			e := DecodeError(resp)
			if e.Status != tc.status || e.Code != Code(tc.code) || e.Message != tc.message || e.Field != tc.field {
				t.Fatalf("got %+v", e)
			}
		})
	}
}

func TestSSEReader(t *testing.T) {
	t.Parallel()
	stream := ": keepalive\n\n" +
		"id: 1\nevent: step\ndata: {\"seq\":1,\"type\":\"step\"}\n\n" +
		": keepalive\r\n" +
		"id: 2\r\nevent: phase\r\ndata: line1\r\ndata: line2\r\n\r\n" +
		"id:3\ndata:nospace\nunknown: x\n\n" +
		"event: end\n\n" +
		"id: 4\ndata: cut off"
	want := []SSEFrame{
		{ID: "1", Event: "step", Data: `{"seq":1,"type":"step"}`},
		{ID: "2", Event: "phase", Data: "line1\nline2"},
		{ID: "3", Data: "nospace"},
		{Event: "end"},
	}
	for name, r := range map[string]io.Reader{
		"whole":    strings.NewReader(stream),
		"one-byte": iotest.OneByteReader(strings.NewReader(stream)),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sr := NewSSEReader(r)
			for i, w := range want {
				f, err := sr.Next()
				if err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				if f != w {
					t.Fatalf("frame %d = %+v, want %+v", i, f, w)
				}
			}
			if _, err := sr.Next(); err != io.EOF {
				t.Fatalf("after the last frame: %v, want io.EOF", err)
			}
		})
	}
}

func TestSSEReaderError(t *testing.T) {
	t.Parallel()
	boom := errors.New("connection reset")
	sr := NewSSEReader(io.MultiReader(strings.NewReader("id: 1\ndata: x\n\nid: 2\n"), iotest.ErrReader(boom)))
	if f, err := sr.Next(); err != nil || f.ID != "1" {
		t.Fatalf("first frame %+v, %v", f, err)
	}
	if _, err := sr.Next(); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want %v", err, boom)
	}
}
