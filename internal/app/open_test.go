package app

import (
	"runtime"
	"strings"
	"testing"
)

// The browser command: $BROWSER's first entry (with %s replaced, or the URL appended), else
// xdg-open; a display is DISPLAY or WAYLAND_DISPLAY.
func TestBrowserCommand(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	const u = "http://127.0.0.1:7340/"
	for _, c := range []struct {
		browser string
		want    string
	}{
		{"firefox", "firefox " + u},
		{"firefox --new-window %s:chromium", "firefox --new-window " + u},
		{"::chromium", "chromium " + u},
	} {
		if got := strings.Join(browserCommand(env("BROWSER", c.browser), u), " "); got != c.want {
			t.Errorf("BROWSER=%q: %q, want %q", c.browser, got, c.want)
		}
	}
	if runtime.GOOS == "linux" {
		if got := strings.Join(browserCommand(env(), u), " "); got != "xdg-open "+u {
			t.Errorf("without BROWSER: %q", got)
		}
		if hasDisplay(env()) || !hasDisplay(env("DISPLAY", ":0")) || !hasDisplay(env("WAYLAND_DISPLAY", "wayland-0")) {
			t.Errorf("hasDisplay: none %v, DISPLAY %v, WAYLAND_DISPLAY %v", hasDisplay(env()), hasDisplay(env("DISPLAY", ":0")), hasDisplay(env("WAYLAND_DISPLAY", "wayland-0")))
		}
	}
}

// --no-accounts is for loopback only: every other address, and a public URL, is refused naming
// what was given.
func TestCheckNoAccounts(t *testing.T) {
	for _, ok := range [][3]string{{"127.0.0.1", "", ""}, {"localhost", "", ""}, {"0.0.0.0", "127.0.0.1:0", ""}, {"", "[::1]:7340", ""}} {
		if err := checkNoAccounts(ok[0], ok[1], ok[2]); err != nil {
			t.Errorf("checkNoAccounts(%q, %q): %v", ok[0], ok[1], err)
		}
	}
	for _, bad := range [][3]string{{"0.0.0.0", "", ""}, {"::", "", ""}, {"192.168.1.5", "", ""}, {"127.0.0.1", "0.0.0.0:7340", ""}, {"example.com", "", ""}, {"127.0.0.1", "", "https://agents.example.com"}} {
		err := checkNoAccounts(bad[0], bad[1], bad[2])
		if err == nil || !strings.Contains(err.Error(), "--no-accounts") {
			t.Errorf("checkNoAccounts(%q, %q, %q) = %v, want a refusal naming --no-accounts", bad[0], bad[1], bad[2], err)
		}
	}
}
