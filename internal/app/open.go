package app

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// Opening the console in the person's browser when serve starts: on a machine with a display
// (DISPLAY or WAYLAND_DISPLAY set; a Mac not reached over SSH) and only when serve's standard
// output is a terminal (a person started it, not a service manager or a container), the first time
// (no password yet, so the page they need is the one that sets it) or always with --no-accounts
// (a launcher on a laptop). --no-open never does.

// hasDisplay says whether a browser opened here would show on a screen.
func hasDisplay(getenv func(string) string) bool {
	if getenv("DISPLAY") != "" || getenv("WAYLAND_DISPLAY") != "" {
		return true
	}
	return runtime.GOOS == "darwin" && getenv("SSH_CONNECTION") == "" && getenv("SSH_TTY") == ""
}

// browserCommand is how to open url: $BROWSER (a list separated by ':', each a command that may
// hold %s for the URL, as xdg-open reads it), else xdg-open (open on a Mac).
func browserCommand(getenv func(string) string, url string) []string {
	if b := getenv("BROWSER"); b != "" {
		for _, c := range strings.Split(b, ":") {
			if f := strings.Fields(c); len(f) > 0 {
				if strings.Contains(c, "%s") {
					for i := range f {
						f[i] = strings.ReplaceAll(f[i], "%s", url)
					}
					return f
				}
				return append(f, url)
			}
		}
	}
	if runtime.GOOS == "darwin" {
		return []string{"open", url}
	}
	return []string{"xdg-open", url}
}

// openBrowser starts the browser on url and leaves it running (it is the person's, not ours);
// a goroutine reaps the opener when it exits, which xdg-open does at once.
func openBrowser(argv []string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("open the console in the browser (%s): %w", argv[0], err)
	}
	go cmd.Wait()
	return nil
}

// loopbackHost says whether host (a name or an address, maybe in brackets) is this machine only.
func loopbackHost(host string) bool {
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkNoAccounts refuses --no-accounts on any address but loopback: without a password the
// console must not be reachable from another machine.
func checkNoAccounts(host, listenAddr, publicURL string) error {
	what, h := "--host "+host, host
	if listenAddr != "" {
		what = "--listen " + listenAddr
		var err error
		if h, _, err = net.SplitHostPort(listenAddr); err != nil {
			return fmt.Errorf("--listen %q: %w", listenAddr, err)
		}
	}
	if !loopbackHost(h) {
		return fmt.Errorf("--no-accounts serves the console without a password, so it listens on this machine only (127.0.0.1, ::1 or localhost), and %s is not: drop --no-accounts to serve other machines, with accounts", what)
	}
	if publicURL != "" {
		return fmt.Errorf("--no-accounts serves this machine only, so it takes no --public-url (%s): drop one of them", publicURL)
	}
	return nil
}

// stdoutIsTerminal says whether serve's standard output is a terminal.
func stdoutIsTerminal() bool { return isTerminal(int(os.Stdout.Fd())) }
