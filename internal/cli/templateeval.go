package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"agentrun.dev/agentrun/client"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/template"
)

// template eval: a template's cases as real runs on a throwaway server (this binary's own serve
// on a temporary data folder, removed afterwards), each case an evaluation group of one task so
// the evaluation's graders (rubric included) score it.

func templateEvalCmd() *cobra.Command {
	var modelServer string
	var runs int
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "eval DIR|NAME [--model-server URL] [--runs K]",
		Short: "Run a template's eval cases as real runs on a throwaway server and grade them",
		Long: `Start a throwaway server (this binary's serve, on a temporary data folder removed afterwards),
apply the template to it, run each eval case (eval/cases/*.yaml) as a real run K times, grade each
with the case's grader (exact, normalized, regex, json, script or rubric), and print a table:
case, verdict, score, cost, run. The model is reached with the environment's keys, or the
Anthropic-format server --model-server names (the scripted model server, for instance). Exits 0
when the pass rate meets the template's threshold (template.yaml, default 1), 1 otherwise;
progress goes to stderr.`,
		Example: `  agentrun template eval inbound-lead
  agentrun template eval ./my-template --runs 3
  agentrun template eval kyb --model-server http://127.0.0.1:9999`,
		Args: exactArgs(1, "a template's name or folder"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if runs < 1 || runs > 20 {
				return usageError("--runs is between 1 and 20")
			}
			t, err := loadTemplate(args[0], "", nil)
			if err != nil {
				return err
			}
			if len(t.Cases) == 0 {
				return usageError("template %s has no eval cases (eval/cases/*.yaml)", t.Manifest.Name)
			}
			ctx, cancel := context.WithTimeout(ctxOf(cmd), timeout)
			defer cancel()
			progress := cmd.ErrOrStderr()
			srv, err := startThrowaway(ctx, modelServer, progress)
			if err != nil {
				return err
			}
			defer srv.stop(progress)
			return evalTemplate(ctx, srv.client, t, runs, cmd.OutOrStdout(), progress)
		}),
	}
	cmd.Flags().StringVar(&modelServer, "model-server", "", "an Anthropic-format model server URL to use instead of the environment's keys")
	cmd.Flags().IntVar(&runs, "runs", 1, "runs of each case (pass@k is reported for k up to this)")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Minute, "the whole evaluation's limit")
	return cmd
}

type throwaway struct {
	dir    string
	proc   *exec.Cmd
	done   chan struct{}
	client *client.Client
}

// startThrowaway starts `serve` of this same binary on a fresh data folder and waits for it.
func startThrowaway(ctx context.Context, modelServer string, progress io.Writer) (*throwaway, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find this binary to start a server: %w", err)
	}
	dir, err := os.MkdirTemp("", "agentrun-template-eval-")
	if err != nil {
		return nil, fmt.Errorf("make the throwaway data folder: %w", err)
	}
	env := []string{}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "AGENTRUN_HOME", "AGENTRUN_URL", "AGENTRUN_TOKEN", "AGENTRUN_PUBLIC_URL":
			continue
		}
		if modelServer != "" && (k == "ANTHROPIC_BASE_URL" || k == "ANTHROPIC_API_KEY") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "AGENTRUN_HOME="+dir)
	if modelServer != "" {
		env = append(env, "ANTHROPIC_BASE_URL="+modelServer, "ANTHROPIC_API_KEY=template-eval")
	}
	proc := exec.Command(self, "serve", "--data", dir, "--listen", "127.0.0.1:0")
	proc.Env = env
	logf, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	proc.Stdout, proc.Stderr = logf, logf
	if err := proc.Start(); err != nil {
		logf.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start the throwaway server: %w", err)
	}
	s := &throwaway{dir: dir, proc: proc, done: make(chan struct{})}
	go func() { proc.Wait(); logf.Close(); close(s.done) }()
	fmt.Fprintf(progress, "throwaway server starting in %s\n", dir)
	for {
		var info struct {
			URL string `json:"url"`
			PID int    `json:"pid"`
		}
		b, err := os.ReadFile(filepath.Join(dir, "server.json"))
		if err == nil && json.Unmarshal(b, &info) == nil && info.PID == proc.Process.Pid {
			tok, _ := os.ReadFile(filepath.Join(dir, "token"))
			c, err := client.DiscoverWith(info.URL, strings.TrimSpace(string(tok)))
			if err == nil {
				if _, err := c.Capabilities(ctx); err == nil {
					s.client = c
					fmt.Fprintf(progress, "throwaway server at %s\n", info.URL)
					return s, nil
				}
			}
		}
		select {
		case <-s.done:
			log, _ := os.ReadFile(filepath.Join(dir, "serve.log"))
			os.RemoveAll(dir)
			return nil, fmt.Errorf("the throwaway server exited at start:\n%s", log)
		case <-ctx.Done():
			s.stop(progress)
			return nil, fmt.Errorf("the throwaway server did not come up: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stop ends the server (SIGTERM, then SIGKILL after 20 s) and removes its data folder.
func (s *throwaway) stop(progress io.Writer) {
	s.proc.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		s.proc.Process.Kill()
		<-s.done
	}
	os.RemoveAll(s.dir)
	fmt.Fprintf(progress, "throwaway server stopped, %s removed\n", s.dir)
}

func evalTemplate(ctx context.Context, c *client.Client, t *template.Template, runs int, out, progress io.Writer) error {
	applied, err := c.ApplyTemplate(ctx, &t.Apply)
	if err != nil {
		if ae, ok := api.AsError(err); ok {
			file, field := t.FileOf(ae.Field)
			cp := *ae
			cp.Field = field
			return &template.Error{File: file, Err: &cp}
		}
		return err
	}
	agent := applied.Agent.Metadata.Name
	fmt.Fprintf(progress, "applied %s on the throwaway server\n", t.Manifest.Name)
	var rows [][]string
	total, passed := 0, 0
	passAtK := map[int][]float64{}
	for i, cs := range t.Cases {
		envName := "template-" + t.Manifest.Name
		env := cs.Environment(envName+"."+cs.Name, "1")
		if _, _, err := c.LoadEnvironment(ctx, &env); err != nil {
			return fmt.Errorf("case %s: %w", cs.Name, err)
		}
		fmt.Fprintf(progress, "case %d/%d %s: %d run(s)\n", i+1, len(t.Cases), cs.Name, runs)
		_, res, err := c.Evaluate(ctx, client.Evaluation{
			Name: fmt.Sprintf("case-%d", i+1), Agent: agent, Keep: true,
			EvaluationSpec: api.EvaluationSpec{Environment: env.Ref(), Split: "cases", Repetitions: runs, Timeout: "30m"},
		})
		if err != nil {
			return fmt.Errorf("case %s: %w", cs.Name, err)
		}
		for _, r := range res.Items {
			total++
			verdict, score := r.State, "-"
			if r.State == api.CaseScored {
				verdict = r.Verdict
				if r.Verdict == "pass" {
					passed++
				}
			} else if r.Detail != "" {
				verdict += ": " + truncate(r.Detail, 60)
			}
			if r.Reward != nil {
				score = strconv.FormatFloat(*r.Reward, 'f', 2, 64)
			}
			cost := "unknown"
			if raw, err := c.GetObject(ctx, "agentruns", r.Run); err == nil {
				var run api.AgentRun
				if json.Unmarshal(raw, &run) == nil && run.Status.Cost != nil && run.Status.Cost.TotalUSD != "" {
					cost = "$" + strings.TrimPrefix(run.Status.Cost.TotalUSD, "$")
				}
			}
			name := cs.Name
			if runs > 1 {
				name += "#" + strconv.Itoa(r.Repetition)
			}
			rows = append(rows, []string{name, verdict, score, cost, r.Run})
			fmt.Fprintf(progress, "  %s: %s\n", name, verdict)
		}
		if res.Evaluation != nil {
			for _, pt := range res.Evaluation.PerTask {
				for ks, v := range pt.PassAtK {
					if k, err := strconv.Atoi(ks); err == nil {
						passAtK[k] = append(passAtK[k], v)
					}
				}
			}
		}
	}
	if err := writeTable(out, []string{"CASE", "VERDICT", "SCORE", "COST", "RUN"}, rows); err != nil {
		return err
	}
	rate := 0.0
	if total > 0 {
		rate = float64(passed) / float64(total)
	}
	fmt.Fprintf(out, "\npass rate %d/%d = %.2f (threshold %.2f)\n", passed, total, rate, t.Threshold())
	if runs > 1 {
		var ks []int
		for k := range passAtK {
			ks = append(ks, k)
		}
		sort.Ints(ks)
		for _, k := range ks {
			sum := 0.0
			for _, v := range passAtK[k] {
				sum += v
			}
			fmt.Fprintf(out, "pass@%d %.2f\n", k, sum/float64(len(passAtK[k])))
		}
	}
	if rate < t.Threshold() {
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("pass rate %.2f is below the template's threshold %.2f", rate, t.Threshold())}
	}
	return nil
}
