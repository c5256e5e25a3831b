package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/gateway"
	"agentrun.dev/agentrun/internal/harness"
	"agentrun.dev/agentrun/internal/tools/mcpclient"
)

// What runs inside the run's computer besides the agent's commands: a run whose computer can
// start processes with streamed stdio (computer.Spawner: the local and docker sandboxes and
// desktops) has its stdio MCP servers and its harness started in it, in /workspace, with the
// computer's environment; a run without one (no computer, or a browser) has them on the runner,
// in the run folder. What they need of the host is mounted when the computer is made
// (computerMounts): the npm installs an MCP server's command names, and for a harness its
// install, its home and the gateway's unix socket. A harness reaches the gateway at a loopback
// port inside the computer, forwarded to that socket (computer.Spawner.ForwardUnix), so a
// computer without network reaches the gateway and nothing else.

// gatewaySocket is where a harness run's computer shows the gateway's unix socket.
const gatewaySocket = "/.agentrun/gateway.sock"

// gatewayPort is the loopback port the gateway is forwarded to inside a computer (another one
// when it is taken, as in a computer sharing the host's network).
const gatewayPort = 4180

// sandboxPath is PATH for a harness inside a computer: the computer's own.
const sandboxPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// runsInComputer says whether the run's stdio MCP servers and harness start inside its computer:
// its kind is one whose providers make Spawners (a sandbox or a desktop).
func (d *drive) runsInComputer() bool {
	k := d.computerKind()
	return k == computer.KindSandbox || k == computer.KindDesktop
}

// spawner makes (or takes) the run's computer for a process to start in it.
func (d *drive) spawner(ctx context.Context) (computer.Spawner, error) {
	c, err := d.ensureComputer(ctx)
	if err != nil {
		return nil, err
	}
	sp, ok := c.(computer.Spawner)
	if !ok {
		return nil, fmt.Errorf("the run's %s computer cannot start processes with their stdio (%T)", c.Kind(), c)
	}
	return sp, nil
}

// harnessHome is a harness run's home folder on the host: kept while the run waits, removed
// when it is over.
func harnessHome(dataDir, run string) string { return filepath.Join(dataDir, "harness-home", run) }

// computerMounts are the host paths the run's computer shows for what starts inside it.
func (d *drive) computerMounts() []computer.Mount {
	if !d.runsInComputer() {
		return nil
	}
	var ms []computer.Mount
	seen := map[string]bool{}
	add := func(m computer.Mount) {
		if !seen[m.Target] {
			seen[m.Target] = true
			ms = append(ms, m)
		}
	}
	for _, srv := range d.spec.MCPServers {
		for _, dir := range mcpclient.Mounts(srv) {
			add(computer.Mount{Source: dir, Target: dir})
		}
	}
	if !d.onHarness() {
		return ms
	}
	// The harness's install, read-only where the runner finds it (the cache a test or CI fills,
	// and the data folder's, made now so that an install after the computer is made shows too).
	if c := os.Getenv(harness.CacheEnv); c != "" {
		if st, err := os.Stat(c); err == nil && st.IsDir() {
			add(computer.Mount{Source: c, Target: c})
		}
	}
	installs := filepath.Join(d.e.DataDir, "harnesses")
	if os.MkdirAll(installs, 0o700) == nil {
		add(computer.Mount{Source: installs, Target: installs})
	}
	home := harnessHome(d.e.DataDir, d.run.Metadata.Name)
	// What in the home decides what the harness may do is shown read-only over it, since the
	// agent's commands share the computer (harness.GuardMounts); without that the home is not
	// shown at all, and the harness cannot start there. The same for each workflow agent node's
	// home (takeNodeHome), which the computer's mounts must name before any node starts.
	own := harness.ConfigPaths(string(d.spec.Harness))
	paths := slices.Clone(own)
	for slot := range nodeHomeSlots {
		for _, p := range own {
			paths = append(paths, harness.ConfigPath{Rel: filepath.ToSlash(nodeHomeRel(slot)) + "/" + p.Rel, Dir: p.Dir})
		}
	}
	if os.MkdirAll(home, 0o700) == nil {
		if guards, err := harness.GuardMounts(home, paths); err != nil {
			d.log.Warn("the harness home is not shown in the computer", "err", err)
		} else {
			add(computer.Mount{Source: home, Target: home, Writable: true})
			for _, m := range guards {
				add(m)
			}
		}
	}
	if gw, err := d.e.gateway(); err == nil && gw.SocketPath() != "" {
		add(computer.Mount{Source: gw.SocketPath(), Target: gatewaySocket})
	}
	return ms
}

// nodeHomeSlots is how many workflow agent nodes' harnesses run at once inside a run's computer
// (the map's default concurrency): each one's home is a slot of the run's home, guarded in the
// computer like the run's own (computerMounts), since a computer's mounts are fixed when it is
// made and a node's key is not known then. A node past them waits for one to be free.
const nodeHomeSlots = 4

// nodeHomeRel is slot's home, relative to the run's harness home.
func nodeHomeRel(slot int) string { return filepath.Join("nodes", strconv.Itoa(slot)) }

// takeNodeHome takes a free node home slot for workflow agent node key, waiting (mu, held by
// the caller, let go meanwhile, as the other nodes' calls take it) until one is, and returns its
// folder and the func that gives it back.
func (d *drive) takeNodeHome(ctx context.Context, key string, mu *sync.Mutex) (string, func(), error) {
	d.nodeHomesOnce.Do(func() {
		d.nodeHomes = make(chan int, nodeHomeSlots)
		for slot := range nodeHomeSlots {
			d.nodeHomes <- slot
		}
	})
	var slot int
	select {
	case slot = <-d.nodeHomes:
	default:
		d.j.Emit(api.Event{Type: api.EventHarnessWaiting, StepKey: key, Message: fmt.Sprintf("workflow node %s waits for one of the %d harness homes guarded in the run's computer: as many other agent nodes' harnesses are running", key, nodeHomeSlots)})
		mu.Unlock()
		var err error
		select {
		case slot = <-d.nodeHomes:
		case <-ctx.Done():
			err = fmt.Errorf("workflow node %s waiting for a harness home: %w", key, ctx.Err())
		}
		mu.Lock()
		if err != nil {
			return "", nil, err
		}
	}
	return filepath.Join(harnessHome(d.e.DataDir, d.run.Metadata.Name), nodeHomeRel(slot)), func() { d.nodeHomes <- slot }, nil
}

// connectMCPServer starts or reaches server srv (field at) for this drive: a stdio server inside
// the run's computer when it has one that can, on the runner otherwise.
func (d *drive) connectMCPServer(ctx context.Context, at string, srv api.MCPServer) (*mcpclient.Session, error) {
	if srv.Command == "" || !d.runsInComputer() {
		return mcpclient.Connect(ctx, at, srv, d.folder, d.mcpOpen())
	}
	sp, err := d.spawner(ctx)
	if err != nil {
		return nil, fmt.Errorf("MCP server %s cannot start in the run's computer: %w", srv.Name, err)
	}
	return mcpclient.ConnectIn(ctx, at, srv, spawnIn(sp), d.mcpOpen())
}

// spawnIn is how an MCP server starts in the run's computer sp.
func spawnIn(sp computer.Spawner) mcpclient.Spawn {
	return func(ctx context.Context, argv, env []string) (mcpclient.Process, error) {
		p, err := sp.Spawn(ctx, argv, computer.SpawnOptions{Env: env})
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return p, nil
	}
}

// harnessInComputer moves a harness session into the run's computer when it has one that can
// start it: working folder /workspace, the computer's PATH, and the gateway at a loopback port
// inside forwarded to its socket. It returns where the harness runs, for the timeline.
func (d *drive) harnessInComputer(ctx context.Context, s *harness.Session, gw *gateway.Gateway) (string, error) {
	if !d.runsInComputer() {
		return "on the runner, in the run folder", nil
	}
	sp, err := d.spawner(ctx)
	if err != nil {
		return "", fmt.Errorf("start the harness in the run's computer: %w", err)
	}
	addr, err := sp.ForwardUnix(ctx, gatewayPort, gatewaySocket)
	if err != nil {
		return "", fmt.Errorf("reach the gateway from the run's computer: %w", err)
	}
	base := "http://" + addr
	local := gw.URL()
	s.GatewayURL = base + s.GatewayURL[len(local):]
	s.MCPURL = base + s.MCPURL[len(local):]
	s.Dir = "/workspace"
	s.Env = harness.BaseEnv(sandboxPath, s.Home)
	s.Computer = sp
	return fmt.Sprintf("inside the run's %s computer, in /workspace, reaching the gateway at %s", d.computerKind(), addr), nil
}
