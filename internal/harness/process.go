package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"agentrun.dev/agentrun/internal/computer"
)

// Cmd is a harness child process in its own process group: Stop, or the end of the ctx it was
// started with, kills the whole group at once (the harness's own children included). Started on
// the runner (StartCommand) it is killed too when the runner dies (Pdeathsig on Linux; its stdin
// also closes then); started inside the run's computer (StartIn) it dies with the computer, whose
// processes die with the runner.
type Cmd struct {
	name  string
	kill  func()
	Stdin io.WriteCloser
	// Lines are the lines of stdout; closed when stdout ends.
	Lines <-chan string
	done  chan struct{}
	err   error

	mu   sync.Mutex
	tail []string
}

// tailLines is how many stderr lines an ExitError keeps.
const tailLines = 20

// StartCommand starts bin with args in dir with exactly env (nothing of the server's environment).
func StartCommand(ctx context.Context, name, bin string, args, env []string, dir string) (*Cmd, error) {
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = sysProcAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("harness %s: %w", name, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("harness %s: %w", name, err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("harness %s: %w", name, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start harness %s (%s): %w", name, bin, err)
	}
	kill := func() {
		// The negative pid is the process group: the harness and everything it started.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	return newCmd(ctx, name, stdin, stdout, stderr, cmd.Wait, kill), nil
}

// StartIn starts argv inside a run's computer, in dir (there) with env added to the computer's
// own environment (nothing of the server's).
func StartIn(ctx context.Context, name string, sp computer.Spawner, argv, env []string, dir string) (*Cmd, error) {
	p, err := sp.Spawn(ctx, argv, computer.SpawnOptions{Workdir: dir, Env: env})
	if err != nil {
		return nil, fmt.Errorf("start harness %s (%s) in the run's computer: %w", name, argv[0], err)
	}
	wait := func() error {
		<-p.Done()
		if p.ExitCode() != 0 {
			return errors.New(p.ExitStatus())
		}
		return nil
	}
	return newCmd(ctx, name, p.Stdin(), p.Stdout(), p.Stderr(), wait, func() { p.Close() }), nil
}

// newCmd reads a started process's output: its stdout as Lines, the tail of its stderr; wait
// returns how it ended once its output has been read, kill ends its group.
func newCmd(ctx context.Context, name string, stdin io.WriteCloser, stdout, stderr io.Reader, wait func() error, kill func()) *Cmd {
	c := &Cmd{name: name, kill: kill, Stdin: stdin, done: make(chan struct{})}
	lines := make(chan string, 64)
	c.Lines = lines
	var readers sync.WaitGroup
	readers.Add(2)
	// The readers and the waiter belong to c: they end when the process's pipes close, which Stop
	// (or ctx) forces by killing the group.
	go func() {
		defer readers.Done()
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	go func() {
		defer readers.Done()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 16<<10), 4<<20)
		for sc.Scan() {
			c.mu.Lock()
			c.tail = append(c.tail, sc.Text())
			if len(c.tail) > tailLines {
				c.tail = c.tail[len(c.tail)-tailLines:]
			}
			c.mu.Unlock()
		}
	}()
	go func() {
		readers.Wait()
		c.err = wait()
		close(c.done)
	}()
	go func() {
		select {
		case <-ctx.Done():
			c.kill()
		case <-c.done:
		}
	}()
	return c
}

// Stop kills the process group and waits (bounded) for the process to be reaped.
func (c *Cmd) Stop() {
	c.kill()
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
	}
}

// Done is closed once the process has exited and its output has been read.
func (c *Cmd) Done() <-chan struct{} { return c.done }

// Tail is the last lines of stderr so far.
func (c *Cmd) Tail() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.tail...)
}

// Exit is the ExitError for a process that ended (or broke its protocol, why) before a turn's answer.
func (c *Cmd) Exit(why string) *ExitError {
	select {
	case <-c.done:
	case <-time.After(5 * time.Second):
	}
	err := c.err
	if err == nil {
		err = errors.New("exited")
	}
	if why != "" {
		err = fmt.Errorf("%s (%w)", why, err)
	}
	return &ExitError{Harness: c.name, Err: err, Tail: c.Tail()}
}

// BaseEnv is the environment every harness starts from: a PATH, a locale, HOME and TMPDIR; never the
// server's own variables (its model keys above all).
func BaseEnv(path, home string) []string {
	return []string{"PATH=" + path, "LANG=C.UTF-8", "HOME=" + home, "TMPDIR=" + home + "/tmp", "USER=agent"}
}
