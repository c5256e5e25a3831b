package local_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/computer/computertest"
	"agentrun.dev/agentrun/internal/computer/local"
)

// hostAddress is a non-loopback IPv4 address of one of this machine's interfaces ("" when it
// has none): where a server listening on 0.0.0.0 is reached besides 127.0.0.1.
func hostAddress(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	return ""
}

// A sandbox with the network allowed has a network of its own (an interface up with an address
// and a default route through it), from which the host is not reachable: neither a server on
// the host's 127.0.0.1 (the agentrun API, PostgreSQL under trust auth) nor one on the host's own
// interface address. Each listener answers the host itself, so a miss is the sandbox's.
func TestNetworkSandboxCannotReachHost(t *testing.T) {
	t.Parallel()
	p := local.New()
	if a := p.Available(t.Context()); !a.Available {
		t.Skip(a.Reason)
	}
	if a := p.NetworkAvailable(); !a.Available {
		t.Skip(a.Reason)
	}
	listeners := map[string]string{} // address: what it is
	lo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(computertest.Pong(lo))
	listeners[lo.Addr().String()] = "the host's loopback"
	// slirp4netns's gateway stands for the host's loopback unless told not to.
	listeners[net.JoinHostPort("10.0.2.2", fmt.Sprint(lo.Addr().(*net.TCPAddr).Port))] = "the host's loopback through slirp4netns's gateway"
	if a := hostAddress(t); a != "" {
		ln, err := net.Listen("tcp", net.JoinHostPort(a, "0"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(computertest.Pong(ln))
		listeners[ln.Addr().String()] = "the host's interface address"
	} else {
		t.Log("this machine has no non-loopback IPv4 address: only its loopback is tried")
	}
	// Every listener answers on the host.
	for addr, what := range listeners {
		if strings.HasPrefix(addr, "10.0.2.2:") {
			continue
		}
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("%s %s from the host: %v", what, addr, err)
		}
		b := make([]byte, 5)
		n, _ := c.Read(b)
		c.Close()
		if string(b[:n]) != "pong\n" {
			t.Fatalf("%s %s from the host answered %q", what, addr, b[:n])
		}
	}

	c, err := p.Create(t.Context(), computer.Spec{Run: "netbox", Folder: t.TempDir(), Kind: computer.KindSandbox, Network: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}()
	s := c.(computer.Sandbox)
	exec := func(cmd string) computer.ExecResult {
		t.Helper()
		r, err := s.Exec(t.Context(), cmd, computer.ExecOptions{Timeout: 30 * time.Second})
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		return r
	}
	// A network stack of its own: an interface besides lo with an IPv4 address, and a default
	// route through an interface besides lo (/proc/net/route: destination 00000000).
	r := exec(`ip -4 -o addr show | awk '$2 != "lo" {print $2, $4}'; awk 'NR > 1 && $2 == "00000000" && $1 != "lo" {print "default via", $1}' /proc/net/route`)
	if r.ExitCode != 0 || !strings.Contains(r.Stdout, "default via ") || len(strings.Fields(r.Stdout)) < 5 {
		t.Fatalf("the sandbox with network has no interface with an address and a default route: exit %d %q %q", r.ExitCode, r.Stdout, r.Stderr)
	}
	t.Logf("the sandbox's network: %s", strings.ReplaceAll(strings.TrimSpace(r.Stdout), "\n", "; "))
	// What refuses the host cannot be undone from inside: the sandbox has no CAP_NET_ADMIN.
	if a := hostAddress(t); a != "" {
		if r := exec("ip route del prohibit " + a); r.ExitCode == 0 {
			t.Errorf("the sandbox removed the route refusing the host's %s: %q", a, r.Stdout)
		}
	}
	for addr, what := range listeners {
		host, port, _ := net.SplitHostPort(addr)
		r := exec(fmt.Sprintf(`timeout 10 bash -c 'exec 3<>/dev/tcp/%s/%s && head -c 5 <&3'`, host, port))
		if r.ExitCode == 0 || strings.Contains(r.Stdout, "pong") {
			t.Errorf("a sandbox with network reached %s at %s: exit %d %q", what, addr, r.ExitCode, r.Stdout)
		} else {
			t.Logf("%s at %s from the sandbox: exit %d %s", what, addr, r.ExitCode, strings.TrimSpace(r.Stderr))
		}
	}
	// Where the network comes from is said in the computer's Info.
	if info := strings.Join(c.Info(), "\n"); !strings.Contains(info, "slirp4netns") || strings.Contains(info, "shared with the host") {
		t.Errorf("the sandbox's info does not say its network is its own: %s", info)
	}
}

// Without slirp4netns a sandbox with the network allowed is not made (never one on the host's
// network instead): the error and the provider's note name the package to install; a sandbox
// without network is still made.
func TestNetworkSandboxNeedsSlirp4netns(t *testing.T) {
	t.Parallel()
	p := &local.Provider{Slirp4netns: "no-such-slirp4netns"}
	a := p.Available(t.Context())
	if !a.Available {
		t.Skip(a.Reason)
	}
	if !strings.Contains(a.Reason, "apt-get install slirp4netns") {
		t.Errorf("the provider's note without slirp4netns: %q", a.Reason)
	}
	c, err := p.Create(t.Context(), computer.Spec{Run: "noslirp", Folder: t.TempDir(), Kind: computer.KindSandbox, Network: true})
	if err == nil {
		c.Close()
		t.Fatal("a sandbox with network was made without slirp4netns")
	}
	if !strings.Contains(err.Error(), "network: true") || !strings.Contains(err.Error(), "apt-get install slirp4netns") {
		t.Errorf("the error without slirp4netns: %v", err)
	}
	c, err = p.Create(t.Context(), computer.Spec{Run: "noslirp-nonet", Folder: t.TempDir(), Kind: computer.KindSandbox})
	if err != nil {
		t.Fatalf("a sandbox without network, without slirp4netns: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Error(err)
	}
}

// A sandbox with the network allowed leaves the host's mounts as they are: a shared mount with
// another mounted under it (as Docker's /var/lib/docker holds each running container's overlay
// root) is still mounted after the sandbox came and went. slirp4netns's own sandbox once
// detached such mounts on the host (a running container's root then read as empty).
func TestNetworkSandboxLeavesHostMounts(t *testing.T) {
	p := local.New()
	if a := p.Available(t.Context()); !a.Available {
		t.Skip(a.Reason)
	}
	if a := p.NetworkAvailable(); !a.Available {
		t.Skip(a.Reason)
	}
	if os.Geteuid() != 0 {
		t.Skip("making a shared mount on the host needs root")
	}
	shared := t.TempDir()
	if err := syscall.Mount(shared, shared, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("bind mount %s: %v", shared, err)
	}
	t.Cleanup(func() { syscall.Unmount(shared, syscall.MNT_DETACH) })
	if err := syscall.Mount("", shared, "", syscall.MS_SHARED, ""); err != nil {
		t.Fatalf("make %s shared: %v", shared, err)
	}
	inner := filepath.Join(shared, "inner")
	if err := os.Mkdir(inner, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", inner, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount a tmpfs at %s: %v", inner, err)
	}
	t.Cleanup(func() { syscall.Unmount(inner, syscall.MNT_DETACH) })
	mounted := func(dir string) bool {
		b, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 4 && f[4] == dir {
				return true
			}
		}
		return false
	}
	if !mounted(inner) {
		t.Fatalf("%s is not in this process's mount table after mounting it", inner)
	}
	c, err := p.Create(t.Context(), computer.Spec{Run: "netmounts", Folder: t.TempDir(), Kind: computer.KindSandbox, Network: true})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if !mounted(shared) || !mounted(inner) {
		t.Errorf("after a network sandbox, the host's mounts at %s (shared) and %s under it: mounted %v and %v, want both still mounted", shared, inner, mounted(shared), mounted(inner))
	}
}
