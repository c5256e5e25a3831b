// Package sandboxhelper owns the helper process that runs inside a sandbox
// and the host-side client of its line protocol, shared by the local
// (bubblewrap) and docker sandbox providers. The helper is the server's own
// executable, made visible read-only inside the sandbox at HelperPath and
// started there with Argv; an init function turns such a process into the
// helper before main runs. It starts the agent's commands (each under the
// sandbox's resource limits), keeps the background ones with their output,
// reads and writes files, runs long-lived processes with their stdio streamed
// over the same protocol (computer.Spawner: an MCP server, a harness; stdio.go)
// and forwards a loopback port inside to a mounted unix socket (the gateway's);
// the provider around it only has to start it with its stdin and stdout
// connected to a Client, and to end it.
package sandboxhelper

import (
	"encoding/json"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/computer"
)

// The host talks to the helper inside the sandbox with one JSON object per
// line: requests on the helper's stdin, responses on its stdout, matched by
// ID so calls may overlap.

type request struct {
	ID int64  `json:"id"`
	Op string `json:"op"` // ping, exec, start, list, output, stop, read, write, cancel, spawn, stdin, ack, kill, forward

	Cmd       string   `json:"cmd,omitempty"`
	Workdir   string   `json:"workdir,omitempty"`
	Env       []string `json:"env,omitempty"`
	TimeoutMS int64    `json:"timeout_ms,omitempty"`
	MaxOutput int      `json:"max_output,omitempty"`

	Proc   string `json:"proc,omitempty"`   // background process id
	Offset int64  `json:"offset,omitempty"` // output offset
	Target int64  `json:"target,omitempty"` // request id to cancel

	Path string `json:"path,omitempty"`
	Data []byte `json:"data,omitempty"`

	// spawn, stdin, ack, kill, forward (stdio.go)
	Argv   []string `json:"argv,omitempty"`
	Sid    int64    `json:"sid,omitempty"` // a spawned process: its spawn request's id
	Fd     int      `json:"fd,omitempty"`  // 1 stdout, 2 stderr
	N      int64    `json:"n,omitempty"`   // ack: bytes read by the host
	EOF    bool     `json:"eof,omitempty"` // stdin: close it
	Port   int      `json:"port,omitempty"`
	Socket string   `json:"socket,omitempty"`
}

type response struct {
	ID    int64  `json:"id"`
	Err   string `json:"err,omitempty"`
	Agent bool   `json:"agent,omitempty"` // Err is the agent's mistake

	PidNS  string                 `json:"pidns,omitempty"` // ping
	Exec   *computer.ExecResult   `json:"exec,omitempty"`
	Proc   *computer.ProcessInfo  `json:"proc,omitempty"`
	Procs  []computer.ProcessInfo `json:"procs,omitempty"`
	Output *computer.Output       `json:"output,omitempty"`
	Data   []byte                 `json:"data,omitempty"`

	PID  int    `json:"pid,omitempty"`  // spawn
	Addr string `json:"addr,omitempty"` // forward
	// Event is output or the exit of a spawned process, sent unasked (ID 0).
	Event *event `json:"event,omitempty"`
}

// event is a spawned process's output (Fd with Data, or EOF) or its exit (Exit).
type event struct {
	Sid  int64  `json:"sid"`
	Fd   int    `json:"fd,omitempty"`
	Data []byte `json:"data,omitempty"`
	EOF  bool   `json:"eof,omitempty"`
	Exit *int   `json:"exit,omitempty"`
	// Status is how it exited, as the process's state says ("signal: killed").
	Status string `json:"status,omitempty"`
}

// Limits is what the helper applies to each command it starts, as
// resource limits of the process (zero: not set).
type Limits struct {
	AS      int64 `json:"as"` // RLIMIT_AS; 0 when a memory cgroup bounds memory instead
	CPU     int64 `json:"cpu"`
	NProc   int64 `json:"nproc"`
	MaxFile int64 `json:"max_file"` // RLIMIT_FSIZE
	// CgroupFDs are open cgroup.procs files of the sandbox's cgroups (one per hierarchy) that the
	// helper inherits. Each command writes itself into them before it runs, so the cgroups' memory
	// and process limits bind the commands and what they start, never the helper: a command that
	// fills the memory (or a /tmp in it) is killed, not the helper that reports on it.
	CgroupFDs []int `json:"cgroup_fds,omitempty"`
}

// Argv is the command line that starts the helper inside a sandbox, with
// the executable at HelperPath: each command it starts gets limits l.
func Argv(l Limits) []string { return []string{HelperPath, helperArg, mustJSON(l)} }

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

const (
	defaultTimeout   = 120 * time.Second
	defaultMaxOutput = 1 << 20
	maxFileBytes     = 10 << 20 // ReadFile/WriteFile bound
	bgKeep           = 4 << 20  // output kept per background process
	maxOutputRead    = 256 << 10
	maxRunning       = 32 // background processes running at once
	maxKept          = 32 // finished background processes remembered
)

// SafeName keeps the lowercase letters, digits and dashes of a run's name (at most 40), to name
// the run's cgroups or container after it.
func SafeName(run string) string {
	var b strings.Builder
	for _, r := range run {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			b.WriteRune(r)
		}
		if b.Len() >= 40 {
			break
		}
	}
	if b.Len() == 0 {
		return "run"
	}
	return b.String()
}
