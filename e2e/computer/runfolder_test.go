package computer

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

// swapProgram is what the audit ran in the sandbox: it swaps (renameat2 RENAME_EXCHANGE, as fast
// as it can) decoy files with symlinks to the data folder's token (by its absolute host path), seal
// key and session key (relative, out of the folder) and the host's /etc/shadow, and a directory with a link to the data folder
// itself, while the runner snapshots the run folder after each tool call. Through descriptors held
// open it rewrites the decoys now and then (a new mtime makes a snapshot read them again). It counts
// its rounds in /tmp/swaps.
const swapProgram = `
import ctypes, os
os.chdir("/workspace")
libc = ctypes.CDLL(None, use_errno=True)
def xchg(a, b):
    if libc.renameat2(-100, a, -100, b, 2) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")
pairs = []
for i, target in enumerate([TOKEN, "../../seal.key", "../../session.key", "../../token", "/etc/shadow"]):
    decoy, link = "decoy%d.txt" % i, "swap%d" % i
    fd = os.open(decoy, os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, b"harmless\n")
    os.symlink(target, link)
    pairs.append((decoy.encode(), link.encode(), fd))
os.makedirs("work", exist_ok=True)
open("work/notes.txt", "w").write("notes\n")
os.symlink("../..", "swapdir")
n = 0
while True:
    for a, b, fd in pairs:
        xchg(a, b)
    xchg(b"work", b"swapdir")
    n += 1
    if n % 100 == 0:
        for a, b, fd in pairs:
            os.pwrite(fd, b"harmless\n", 0)
    if n % 500 == 0:
        open("/tmp/swaps", "w").write(str(n))
`

// An agent's sandboxed program races the run-folder snapshot with symlinks swapped in for files and
// folders, over 30 snapshots: no byte of the data folder's secrets reaches the store's run files or
// the files API, and the store keeps working (the directory swap once made the server open and
// close its own database, dropping SQLite's locks).
func TestRunFolderSwapRace(t *testing.T) {
	t.Parallel()
	NeedBwrap(t)
	const calls = 30
	placeholder := NewEnv(t, QuickstartScript) // only for its data folder path, known before the script
	tokenPath := filepath.Join(placeholder.Dir, "token")
	prog := strings.Replace(swapProgram, "TOKEN", strconv.Quote(tokenPath), 1)
	start := fmt.Sprintf("echo %s | base64 -d > /tmp/swap.py && python3 /tmp/swap.py",
		base64.StdEncoding.EncodeToString([]byte(prog)))
	var sb strings.Builder
	sb.WriteString("entries:\n  - name: race\n    match: \"Race the snapshot\"\n    turns:\n")
	call := func(input map[string]any) {
		b, _ := json.Marshal(input)
		fmt.Fprintf(&sb, "      - tool_calls:\n          - name: bash\n            input: %s\n", b)
	}
	call(map[string]any{"command": start, "background": true})
	for i := 1; i < calls; i++ {
		call(map[string]any{"command": fmt.Sprintf("echo line-%d >> log.txt; sleep 0.05; cat /tmp/swaps 2>/dev/null || echo 0", i)})
	}
	sb.WriteString("      - text: \"raced: {{last_tool_result}}\"\n")
	e := NewEnv(t, sb.String())
	e.Dir = placeholder.Dir
	e.Start()

	if st := e.Do("PUT", "/v2/agents/racer", `{"metadata":{"name":"racer"},"spec":{"computer":{"kind":"sandbox","provider":"local"},"perRunMaxCostUSD":"5"}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("POST", "/v2/agentruns", `{"metadata":{"name":"race"},"spec":{"agent":"racer","input":"Race the snapshot"}}`, nil)
	r := e.WaitPhase("race", 3*time.Minute, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("run ended %s/%s: %s", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	// The swapper really ran through the snapshots.
	last := e.ToolResults("race")[fmt.Sprintf("t%d/tool/0", calls-1)].Content
	lines := strings.Fields(last)
	if len(lines) == 0 {
		t.Fatalf("the last call printed nothing")
	}
	if n, _ := strconv.Atoi(lines[len(lines)-1]); n < 500 {
		t.Fatalf("the swapper made %q rounds by the last call: the race did not run", last)
	}

	var secrets []string
	for _, name := range []string{"token", "seal.key", "session.key", "accounts.json"} {
		if b, err := os.ReadFile(filepath.Join(e.Dir, name)); err == nil && len(strings.TrimSpace(string(b))) >= 8 {
			secrets = append(secrets, strings.TrimSpace(string(b)))
		}
	}
	if b, err := os.ReadFile("/etc/shadow"); err == nil && len(strings.TrimSpace(string(b))) >= 8 {
		secrets = append(secrets, strings.TrimSpace(string(b)))
	}
	if len(secrets) < 2 {
		t.Fatalf("found only %d secrets in the data folder to look for", len(secrets))
	}
	var list struct {
		Items []struct{ Path string } `json:"items"`
	}
	if st := e.Do("GET", "/v2/agentruns/race/files/", nil, &list); st != 200 {
		t.Fatalf("list files: HTTP %d", st)
	}
	sawLog := false
	for _, f := range list.Items {
		base := filepath.Base(f.Path)
		if base == "token" || base == "seal.key" || base == "session.key" || strings.HasPrefix(base, "agentrun.db") || strings.Contains(f.Path, "runs/") {
			t.Errorf("the store holds %s, a data folder file reached through a swapped link", f.Path)
		}
		body := getFileBody(e, "race", f.Path)
		for _, s := range secrets {
			if strings.Contains(body, s) {
				t.Errorf("run file %s holds a data folder secret", f.Path)
			}
		}
		if f.Path == "log.txt" && strings.Count(body, "line-") == calls-1 {
			sawLog = true
		}
	}
	if !sawLog {
		t.Errorf("log.txt with %d lines is not among the saved files %v: the snapshots did not run", calls-1, list.Items)
	}
	// The store still answers writes after the race.
	if st := e.Do("PUT", "/v2/agents/after", `{"metadata":{"name":"after"},"spec":{}}`, nil); st != 201 {
		t.Errorf("store write after the race: HTTP %d", st)
	}
}

// getFileBody reads one run file through the files API.
func getFileBody(e *Env, run, p string) string {
	e.T.Helper()
	req, _ := http.NewRequest("GET", e.URL+"/v2/agentruns/"+run+"/files/"+p, nil)
	req.Header.Set("Authorization", "Bearer "+e.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.T.Fatalf("get %s: %v", p, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		e.T.Fatalf("get %s: HTTP %d %s", p, resp.StatusCode, b)
	}
	return string(b)
}

// A command cut off by a crash wrote a file no completed step saved: while the run waits to be
// resolved, read-file shows it as the runner left it, so a person can inspect it first.
func TestCrashedCommandFileVisible(t *testing.T) {
	t.Parallel()
	NeedBwrap(t)
	e := NewEnv(t, `
entries:
  - name: partial
    match: "Write then hang"
    turns:
      - tool_calls:
          - name: bash
            input: {command: "echo partial-output > partial.txt; sleep 120"}
      - text: "after: {{last_tool_result}}"
`)
	e.Start()
	if st := e.Do("PUT", "/v2/agents/writer", `{"metadata":{"name":"writer"},"spec":{"computer":{"kind":"sandbox","provider":"local"}}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("POST", "/v2/agentruns", `{"metadata":{"name":"partial"},"spec":{"agent":"writer","input":"Write then hang"}}`, nil)
	onDisk := filepath.Join(e.Dir, "runs", "partial", "partial.txt")
	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, _ := os.ReadFile(onDisk); string(b) == "partial-output\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command never wrote %s", onDisk)
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.Kill()
	e.Start()
	r := e.WaitPhase("partial", 60*time.Second, api.PhaseNeedsResolution)
	if r.Status.WaitingOn == nil || r.Status.WaitingOn.StepKey != "t0/tool/0" {
		t.Fatalf("waiting on %+v, want the bash step", r.Status.WaitingOn)
	}
	if got := e.MustCLI(0, "runs", "read-file", "partial", "partial.txt").Stdout; got != "partial-output\n" {
		t.Errorf("read-file before resolving = %q, want the partial file", got)
	}
	e.MustCLI(0, "runs", "resolve", "partial", "--skip")
	r = e.WaitPhase("partial", 60*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("after skip the run ended %s: %s", r.Status.Phase, r.Status.Message)
	}
}

// serveOnce starts `agentrun serve` on e's data folder and returns what it printed if it exits
// within the wait; a server that came up is stopped and reported as started.
func serveOnce(e *Env, wait time.Duration) (out string, exited bool) {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	cmd := exec.CommandContext(ctx, BinPath, "serve", "--listen", "127.0.0.1:0")
	cmd.Env = e.BaseEnv()
	var buf SyncBuffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	return buf.String(), ctx.Err() == nil && err != nil
}

// The data folder is made private at every start (an older version left agentrun.db 0644), and a
// folder or file other users can write, or that another user owns, stops the server with its path.
func TestDataFolderPermissions(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, QuickstartScript)
	e.Start()
	e.Kill()
	// As an older version (or a loose umask) left it.
	os.Chmod(e.Dir, 0o755)
	os.Chmod(filepath.Join(e.Dir, "agentrun.db"), 0o644)
	os.Chmod(filepath.Join(e.Dir, "token"), 0o644)
	e.Start()
	e.Kill()
	if st, _ := os.Stat(e.Dir); st.Mode().Perm() != 0o700 {
		t.Errorf("data folder mode %04o after start, want 0700", st.Mode().Perm())
	}
	entries, _ := os.ReadDir(e.Dir)
	for _, ent := range entries {
		if info, _ := ent.Info(); ent.Type().IsRegular() && info.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %04o after start, want 0600", ent.Name(), info.Mode().Perm())
		}
	}

	os.Chmod(e.Dir, 0o777)
	out, exited := serveOnce(e, 30*time.Second)
	if !exited || !strings.Contains(out, e.Dir) || !strings.Contains(out, "writable by other users") {
		t.Errorf("serve on a 0777 data folder: exited=%v, output %q; want a refusal naming the folder", exited, out)
	}
	os.Chmod(e.Dir, 0o700)
	tok := filepath.Join(e.Dir, "token")
	os.Chmod(tok, 0o666)
	out, exited = serveOnce(e, 30*time.Second)
	if !exited || !strings.Contains(out, tok) {
		t.Errorf("serve with a world-writable token: exited=%v, output %q; want a refusal naming %s", exited, out, tok)
	}
	os.Chmod(tok, 0o600)
	if os.Geteuid() == 0 {
		os.Chown(e.Dir, 65534, 65534)
		out, exited = serveOnce(e, 30*time.Second)
		if !exited || !strings.Contains(out, "owned by uid 65534") {
			t.Errorf("serve on a folder another user owns: exited=%v, output %q", exited, out)
		}
		os.Chown(e.Dir, 0, 0)
	}
	e.Start() // and it starts again once the folder is fixed
}

// A sandbox cannot leave a setuid program in the host's run folder: /workspace is mounted nosuid
// and nodev inside the sandbox, and the snapshot clears setuid and setgid bits on the host's copy and
// saves permission bits only.
func TestSandboxCannotPlantSetuid(t *testing.T) {
	t.Parallel()
	NeedBwrap(t)
	e := NewEnv(t, `
entries:
  - name: suid
    match: "Plant setuid"
    turns:
      - tool_calls:
          - name: bash
            input: {command: "grep ' /workspace ' /proc/self/mountinfo; cp /bin/true prog && chmod 6755 prog && stat -c %a prog"}
      - text: "planted: {{last_tool_result}}"
`)
	e.Start()
	if st := e.Do("PUT", "/v2/agents/planter", `{"metadata":{"name":"planter"},"spec":{"computer":{"kind":"sandbox","provider":"local"}}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("POST", "/v2/agentruns", `{"metadata":{"name":"suid"},"spec":{"agent":"planter","input":"Plant setuid"}}`, nil)
	r := e.WaitPhase("suid", 60*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("run ended %s: %s", r.Status.Phase, r.Status.Message)
	}
	out := e.ToolResults("suid")["t0/tool/0"].Content
	var mount string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, " /workspace ") {
			mount = l
		}
	}
	if f := strings.Fields(mount); len(f) < 6 || !strings.Contains(f[5], "nosuid") || !strings.Contains(f[5], "nodev") {
		t.Errorf("/workspace inside the sandbox is not nosuid,nodev: %q", mount)
	}
	if !strings.Contains(out, "6755") {
		t.Fatalf("the sandbox did not make its setuid program (so this test proves nothing): %q", out)
	}
	st, err := os.Stat(filepath.Join(e.Dir, "runs", "suid", "prog"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 || st.Mode().Perm() != 0o755 {
		t.Errorf("the host's copy of prog is %v, want -rwxr-xr-x with no setuid or setgid", st.Mode())
	}
}

// Restoring the folder never writes through a link: while the run waits for a message, a
// background command in its sandbox puts links where saved files belong (one to a file outside the
// folder, one to another file of the folder); when the run goes on, the restore replaces the links
// with the saved files and neither target changes.
func TestRestoreReplacesPlantedLinks(t *testing.T) {
	t.Parallel()
	NeedBwrap(t)
	victim := filepath.Join(t.TempDir(), "victim.txt")
	if err := os.WriteFile(victim, []byte("victim\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	plant := fmt.Sprintf("sleep 0.3; ln -sfn %s out.txt; ln -sfn notes.txt out2.txt", victim)
	plantJSON, _ := json.Marshal(map[string]any{"command": plant, "background": true})
	e := NewEnv(t, `
entries:
  - name: plant
    match: "Plant links"
    turns:
      - tool_calls:
          - name: bash
            input: {command: "echo saved-1 > out.txt; echo saved-2 > out2.txt; echo notes > notes.txt"}
      - tool_calls:
          - name: bash
            input: `+string(plantJSON)+`
      - tool_calls:
          - name: ask_person
            input: {question: "go on?"}
      - tool_calls:
          - name: bash
            input: {command: "cat out.txt out2.txt notes.txt"}
      - text: "done: {{last_tool_result}}"
`)
	e.Start()
	if st := e.Do("PUT", "/v2/agents/planter", `{"metadata":{"name":"planter"},"spec":{"tools":["ask_person"],"computer":{"kind":"sandbox","provider":"local"}}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("POST", "/v2/agentruns", `{"metadata":{"name":"plant"},"spec":{"agent":"planter","input":"Plant links"}}`, nil)
	e.WaitPhase("plant", 60*time.Second, api.PhaseWaiting)
	folder := filepath.Join(e.Dir, "runs", "plant")
	deadline := time.Now().Add(30 * time.Second)
	for {
		a, errA := os.Lstat(filepath.Join(folder, "out.txt"))
		b, errB := os.Lstat(filepath.Join(folder, "out2.txt"))
		if errA == nil && errB == nil && a.Mode()&os.ModeSymlink != 0 && b.Mode()&os.ModeSymlink != 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the background command never planted its links")
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.MustCLI(0, "runs", "message", "plant", "--content", "yes")
	r := e.WaitPhase("plant", 60*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("run ended %s: %s", r.Status.Phase, r.Status.Message)
	}
	if b, _ := os.ReadFile(victim); string(b) != "victim\n" {
		t.Errorf("the file outside the folder was written through a link: %q", b)
	}
	for name, want := range map[string]string{"out.txt": "saved-1\n", "out2.txt": "saved-2\n", "notes.txt": "notes\n"} {
		p := filepath.Join(folder, name)
		st, err := os.Lstat(p)
		if err != nil || !st.Mode().IsRegular() {
			t.Errorf("%s after the restore: %v %v, want a regular file", name, st, err)
			continue
		}
		if b, _ := os.ReadFile(p); string(b) != want {
			t.Errorf("%s = %q, want %q", name, b, want)
		}
	}
	if got := e.ToolResults("plant")["t3/tool/0"].Content; !strings.Contains(got, "saved-1\nsaved-2\nnotes") {
		t.Errorf("the sandbox read %q after the restore", got)
	}
}
