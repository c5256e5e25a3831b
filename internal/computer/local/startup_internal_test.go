package local

import (
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/computer"
)

// A command the agent runs must be all that runs: startup files the agent can write in its home
// (~/.bash_profile, ~/.profile, ~/.bashrc) or name in the environment (BASH_ENV) would run text
// before every later command, out of sight of approvals.
func TestNoStartupFilesRun(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, computer.Limits{})
	r := run(t, s, `for f in ~/.bash_profile ~/.bash_login ~/.profile ~/.bashrc /tmp/env.sh; do echo 'touch /workspace/startup-ran' > "$f"; done; echo planted`)
	if r.ExitCode != 0 || r.Stdout != "planted\n" {
		t.Fatalf("planting startup files: exit %d %q %q", r.ExitCode, r.Stdout, r.Stderr)
	}
	if r = run(t, s, `echo hi`); r.Stdout != "hi\n" {
		t.Fatalf("echo hi: %q %q", r.Stdout, r.Stderr)
	}
	if _, err := s.Exec(t.Context(), `echo with-env`, computer.ExecOptions{Env: []string{"BASH_ENV=/tmp/env.sh", "ENV=/tmp/env.sh"}}); err != nil {
		t.Fatal(err)
	}
	if r = run(t, s, `test -e /workspace/startup-ran && echo RAN || echo clean; echo "$PATH"`); !strings.HasPrefix(r.Stdout, "clean\n") {
		t.Fatalf("a startup file ran before a later command: %q", r.Stdout)
	} else if !strings.Contains(r.Stdout, "/usr/bin") {
		t.Errorf("PATH in the sandbox lost /usr/bin without a login shell: %q", r.Stdout)
	}
}
