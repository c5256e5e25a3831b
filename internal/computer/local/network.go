package local

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/computer/sandboxhelper"
)

// A sandbox with the network allowed still gets a network namespace of its own (bwrap
// --unshare-net, as every sandbox), given user-mode networking by slirp4netns: a tap device
// (10.0.2.100/24, default route through slirp's 10.0.2.2, DNS at 10.0.2.3) whose connections
// slirp4netns makes as the host's own sockets. The sandbox so reaches what the host reaches,
// except the host itself:
//   - not its loopback (the agentrun API, PostgreSQL under trust auth...): 127.0.0.1 in the
//     sandbox is the sandbox's own, and slirp4netns --disable-host-loopback refuses 10.0.2.2,
//     which would otherwise lead to the host's 127.0.0.1;
//   - not its interface addresses (where a server listening on 0.0.0.0 is reached), nor their
//     subnets' broadcast addresses, nor link-local 169.254.0.0/16 (a cloud's metadata
//     service): a "prohibit" route for each is added in the sandbox's namespace (ip, run there
//     by nsenter) before Create returns, and the sandbox cannot remove it (no CAP_NET_ADMIN).
//
// What remains reachable of the host: its DNS server through 10.0.2.3 (slirp4netns forwards DNS
// to the first nameserver of the host's resolv.conf, one on the host's loopback included), and
// an address the host gets after the sandbox was made. Other machines the host reaches (its
// LAN, containers on a Docker bridge) are "the outside" and reachable.
//
// Without slirp4netns (or nsenter, or ip) a sandbox with the network allowed is not made: never
// one on the host's network instead. Available says so in its note.

// netPrograms are the host programs a sandbox with the network allowed needs, by the Debian
// package each comes in.
var netPrograms = []struct{ name, pkg string }{
	{"slirp4netns", "slirp4netns"}, {"nsenter", "util-linux"}, {"ip", "iproute2"},
}

const (
	// slirpCIDR is slirp4netns's default network; slirpDNS its DNS forwarder in it.
	slirpCIDR = "10.0.2.0/24"
	slirpDNS  = "10.0.2.3"
	// netSetupTimeout bounds each step of giving a sandbox its network.
	netSetupTimeout = 20 * time.Second
)

// netTools are the paths of netPrograms, by name.
type netTools map[string]string

// netTools finds netPrograms on this machine (p.Slirp4netns for slirp4netns), or says which are
// missing and what to install.
func (p *Provider) netTools() (netTools, error) {
	tools := netTools{}
	var missing, pkgs []string
	for _, prog := range netPrograms {
		name := prog.name
		if name == "slirp4netns" && p.Slirp4netns != "" {
			name = p.Slirp4netns
		}
		path, err := lookPathSbin(name)
		if err != nil {
			missing = append(missing, name)
			pkgs = append(pkgs, prog.pkg)
			continue
		}
		tools[prog.name] = path
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("a sandbox with network: true needs slirp4netns, nsenter and ip, which give it a network of its own, "+
			"not the host's; not installed: %s: apt-get install %s", strings.Join(missing, ", "), strings.Join(pkgs, " "))
	}
	return tools, nil
}

// NetworkAvailable says whether a sandbox with the network allowed can be made here
// (computertest.NetworkAvailabler): when slirp4netns, nsenter and ip are installed.
func (p *Provider) NetworkAvailable() computer.Availability {
	if _, err := p.netTools(); err != nil {
		return computer.Availability{Reason: err.Error()}
	}
	return computer.Availability{Available: true}
}

// lookPathSbin is exec.LookPath, also trying /usr/sbin and /sbin (ip and nsenter live there,
// and a normal user's PATH may lack them).
func lookPathSbin(name string) (string, error) {
	path, err := exec.LookPath(name)
	if err == nil || strings.ContainsRune(name, '/') {
		return path, err
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		if st, serr := os.Stat(filepath.Join(dir, name)); serr == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return filepath.Join(dir, name), nil
		}
	}
	return "", err
}

// sandboxNet is a sandbox's own network while it is being made and then while it runs.
type sandboxNet struct {
	tools netTools
	// infoR reads bwrap's --info-fd (the sandbox's PID 1 on the host); infoW and resolvR go to
	// bwrap.
	infoR, infoW *os.File
	resolvR      *os.File

	slirp   *exec.Cmd
	exitW   *os.File // closing it ends slirp4netns (--exit-fd)
	stderr  *sandboxhelper.TailBuffer
	blocked []string // the host's addresses refused in the sandbox
}

// newSandboxNet prepares a network of its own for a sandbox: the pipes bwrap gets and the
// resolv.conf the sandbox sees (slirp4netns's DNS forwarder; the host's may name a resolver on
// the host's loopback, which is not the sandbox's).
func (p *Provider) newSandboxNet() (*sandboxNet, error) {
	tools, err := p.netTools()
	if err != nil {
		return nil, err
	}
	n := &sandboxNet{tools: tools, stderr: sandboxhelper.NewTailBuffer(4 << 10)}
	if n.infoR, n.infoW, err = os.Pipe(); err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		n.close()
		return nil, err
	}
	n.resolvR = r
	_, err = w.WriteString("nameserver " + slirpDNS + "\n")
	w.Close()
	if err != nil {
		n.close()
		return nil, err
	}
	return n, nil
}

// bwrapArgs are the sandbox's arguments for its network, given the file descriptor numbers its
// pipes have in bwrap.
func (n *sandboxNet) bwrapArgs(infoFD, resolvFD int) []string {
	return []string{"--info-fd", strconv.Itoa(infoFD), "--ro-bind-data", strconv.Itoa(resolvFD), "/etc/resolv.conf"}
}

// closeBwrapEnds closes the ends of the pipes bwrap has, once it runs.
func (n *sandboxNet) closeBwrapEnds() {
	n.infoW.Close()
	n.resolvR.Close()
	n.infoW, n.resolvR = nil, nil
}

// started attaches the network to the sandbox's namespace once bwrap has made it and its helper
// answers (bwrap brings the namespace's loopback up, which slirp4netns must not race, after it
// writes --info-fd): the host's addresses refused first, then slirp4netns, up before it returns.
func (n *sandboxNet) started(ctx context.Context) error {
	pid, err := n.childPID()
	if err != nil {
		return err
	}
	if err := n.refuseHost(ctx, pid); err != nil {
		return err
	}
	return n.startSlirp(ctx, pid)
}

// childPID reads the host PID of the sandbox's first process from bwrap's --info-fd.
func (n *sandboxNet) childPID() (int, error) {
	defer func() { n.infoR.Close(); n.infoR = nil }()
	n.infoR.SetReadDeadline(time.Now().Add(netSetupTimeout))
	var info struct {
		ChildPID int `json:"child-pid"`
	}
	if err := json.NewDecoder(n.infoR).Decode(&info); err != nil {
		return 0, fmt.Errorf("read the sandbox's process from bwrap: %w", err)
	}
	if info.ChildPID <= 0 {
		return 0, errors.New("bwrap named no sandbox process")
	}
	return info.ChildPID, nil
}

// hostRefused lists what a sandbox must not reach of this host besides its loopback, as
// prefixes: each IPv4 address of its interfaces, its subnet's broadcast address, and link-local
// 169.254.0.0/16. Addresses in slirp4netns's own network are left out: there only slirp4netns
// answers, and the gateway and DNS forwarder must stay routable.
func hostRefused() ([]string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("list the host's addresses: %w", err)
	}
	_, slirpNet, _ := net.ParseCIDR(slirpCIDR)
	out := []string{"169.254.0.0/16"}
	add := func(ip net.IP) {
		if s := ip.String() + "/32"; !slirpNet.Contains(ip) && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok || n.IP.To4() == nil || n.IP.IsLoopback() || n.IP.IsLinkLocalUnicast() {
			continue
		}
		ip, mask := n.IP.To4(), n.Mask
		add(ip)
		if ones, bits := mask.Size(); bits == 32 && ones < 31 {
			b := make(net.IP, 4)
			for i := range b {
				b[i] = ip[i] | ^mask[i]
			}
			add(b)
		}
	}
	return out, nil
}

// nsenter returns the arguments that run argv in the network namespace of pid, and in its user
// namespace when it has one of its own (bwrap run by a normal user), which gives the command
// CAP_NET_ADMIN there.
func (n *sandboxNet) nsenter(pid int, argv ...string) []string {
	a := []string{"--target", strconv.Itoa(pid), "--net"}
	own, _ := os.Readlink("/proc/self/ns/user")
	theirs, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/user", pid))
	if own != theirs {
		a = append(a, "--user", "--preserve-credentials")
	}
	return append(append(a, "--"), argv...)
}

// refuseHost adds a prohibit route in the sandbox's namespace for each of hostRefused.
func (n *sandboxNet) refuseHost(ctx context.Context, pid int) error {
	refused, err := hostRefused()
	if err != nil {
		return err
	}
	var batch strings.Builder
	for _, r := range refused {
		fmt.Fprintf(&batch, "route add prohibit %s\n", r)
	}
	ctx, cancel := context.WithTimeout(ctx, netSetupTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, n.tools["nsenter"], n.nsenter(pid, n.tools["ip"], "-4", "-batch", "-")...)
	cmd.Stdin = strings.NewReader(batch.String())
	cmd.Env = []string{"PATH=" + sandboxPath}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("refuse the host's addresses %v in the sandbox's network: %v: %s", refused, err, bytes.TrimSpace(out))
	}
	n.blocked = refused
	return nil
}

// startSlirp starts slirp4netns on the sandbox's namespace and waits until its interface is up.
func (n *sandboxNet) startSlirp(ctx context.Context, pid int) error {
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer readyR.Close()
	exitR, exitW, err := os.Pipe()
	if err != nil {
		readyW.Close()
		return err
	}
	// Its own mount namespace without capabilities, and a seccomp filter: slirp4netns parses
	// what the sandbox sends.
	cmd := exec.Command(n.tools["slirp4netns"], "--configure", "--mtu=65520", "--disable-host-loopback",
		"--enable-sandbox", "--enable-seccomp", "--ready-fd=3", "--exit-fd=4", strconv.Itoa(pid), "tap0")
	cmd.ExtraFiles = []*os.File{readyW, exitR}
	cmd.Stdout, cmd.Stderr = n.stderr, n.stderr
	cmd.Env = []string{"PATH=" + sandboxPath}
	// Started in a mount namespace of its own whose mounts are all private (Go makes / rprivate
	// for CLONE_NEWNS): slirp4netns's --enable-sandbox makes only / private before it detaches
	// the old root, so from the host's namespace that detach unmounted every shared mount under
	// it on the host itself: a running Docker container's overlay root among them (its
	// healthchecks and docker exec then found an empty root).
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	err = cmd.Start()
	readyW.Close()
	exitR.Close()
	if err != nil {
		exitW.Close()
		return fmt.Errorf("start slirp4netns: %w", err)
	}
	n.slirp, n.exitW = cmd, exitW
	deadline := time.Now().Add(netSetupTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	readyR.SetReadDeadline(deadline)
	b := make([]byte, 1)
	if _, err := readyR.Read(b); err != nil {
		return fmt.Errorf("slirp4netns did not bring the sandbox's network up (%v): %s", err, strings.TrimSpace(n.stderr.String()))
	}
	return nil
}

// describe is the computer's Info line for its network.
func (n *sandboxNet) describe() string {
	return fmt.Sprintf("network: its own (slirp4netns user-mode networking, DNS at %s): reaches what the host reaches but not the host: "+
		"its loopback is refused, and so are %s", slirpDNS, strings.Join(n.blocked, ", "))
}

// close ends slirp4netns (closing its exit pipe, then SIGKILL if it lingers) and closes the
// pipes still open.
func (n *sandboxNet) close() error {
	for _, f := range []*os.File{n.infoR, n.infoW, n.resolvR} {
		if f != nil {
			f.Close()
		}
	}
	if n.slirp == nil {
		return nil
	}
	n.exitW.Close()
	done := make(chan struct{})
	go func() { n.slirp.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		n.slirp.Process.Kill()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			return errors.New("slirp4netns did not exit 5 s after SIGKILL")
		}
	}
	n.slirp = nil
	return nil
}
