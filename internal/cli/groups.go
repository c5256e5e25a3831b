package cli

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"agentrun.dev/agentrun/client"
	"agentrun.dev/agentrun/internal/api"
)

// Evaluation commands: agentrun eval run|results, agentrun env load|list.

func evalCmd() *cobra.Command {
	cmd := groupCmd("eval", "Evaluate an agent on an Environment's tasks (evaluation groups)")
	cmd.AddCommand(evalRunCmd(), evalResultsCmd())
	return cmd
}

func pct(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.3f", *p)
}

func evalResultsCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "results GROUP [-o json]",
		Short:   "Show an evaluation group's per-case results",
		Example: `  agentrun eval results parallel-agents-eval`,
		Args:    exactArgs(1, "the evaluation group's name"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "", "json", "yaml"); err != nil {
				return err
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			res, err := c.EvalResults(ctxOf(cmd), args[0])
			if err != nil {
				return err
			}
			if output != "" {
				return writeValue(cmd.OutOrStdout(), res, output)
			}
			return printResults(cmd.OutOrStdout(), res)
		}),
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output: json or yaml (default: a table)")
	return cmd
}

func printResults(out io.Writer, res *client.EvalResults) error {
	var rows [][]string
	for _, c := range res.Items {
		reward := "-"
		if c.Reward != nil {
			reward = fmt.Sprintf("%.2f", *c.Reward)
		}
		why := c.Evidence
		if why == "" {
			why = c.Detail
		}
		rows = append(rows, []string{c.TaskID, fmt.Sprint(c.Repetition), c.State, c.Verdict, reward, c.Run, truncate(why, 70)})
	}
	if err := writeTable(out, []string{"TASK", "REP", "STATE", "VERDICT", "REWARD", "RUN", "EVIDENCE"}, rows); err != nil {
		return err
	}
	if e := res.Evaluation; e != nil {
		fmt.Fprintf(out, "\n%s: %s split %s seed %d, grader %s\n", res.Phase, e.Environment, e.Split, e.Seed, e.GraderVersion)
		fmt.Fprintf(out, "cases %d: scored %d (passed %d), unscored %d, evaluation timeouts %d, pending %d\n", e.Cases, e.Scored, e.Passed, e.Unscored, e.TimedOut, e.Pending)
		fmt.Fprintf(out, "pass rate %s, mean reward %s (over scored cases)\n", pct(e.PassRate), pct(e.MeanReward))
		if e.Error != "" {
			fmt.Fprintf(out, "error: %s\n", e.Error)
		}
	}
	return nil
}

// evalRunCmd is the seed's evaluation.py: create the evaluation group, wait for a terminal
// result, print per-case outcomes, delete the group.
func evalRunCmd() *cobra.Command {
	var e client.Evaluation
	var output string
	cmd := &cobra.Command{
		Use:   "run NAME --agent A --environment NAME@VERSION [--split test] [--tasks N] [--repetitions R] [--seed S] [--timeout 30m]",
		Short: "Create an evaluation group, wait for it, print its results and delete it",
		Example: `  agentrun eval run parallel-agents-eval --agent parallel-agents-worker --max-active 2 --max-cost 0.20 \
    --environment nodus/arithmetic-v2@2.0.0 --split test --tasks 2 --repetitions 1 --seed 42 --timeout 10m`,
		Args: exactArgs(1, "the evaluation group's name"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if e.Agent == "" || e.Environment == "" {
				return usageError("name the agent (--agent) and the environment (--environment NAME@VERSION)")
			}
			if err := checkOutput(output, "", "json", "yaml"); err != nil {
				return err
			}
			if cmd.Flags().Changed("max-active") && (e.MaxActive < 1 || e.MaxActive > api.MaxMaxActive) {
				// Sent as 0 it would be read as left out and take the default.
				return usageError("--max-active must be between 1 and %d (leave it out for the default %d)", api.MaxMaxActive, api.DefaultMaxActive)
			}
			e.Name = args[0]
			c, err := newClient()
			if err != nil {
				return err
			}
			status, res, err := c.Evaluate(ctxOf(cmd), e)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if output != "" {
				return writeValue(out, res, output)
			}
			pending := 0
			if status.Status.Evaluation != nil {
				pending = status.Status.Evaluation.Pending
			}
			fmt.Fprintf(out, "%s: cases=%d, pending=%d\n", status.Status.Phase, len(res.Items), pending)
			fmt.Fprintf(out, "pass rate: %s\n", pct(res.Evaluation.PassRate))
			fmt.Fprintf(out, "mean reward: %s\n", pct(res.Evaluation.MeanReward))
			for _, r := range res.Items {
				verdict := r.Verdict
				if verdict == "" {
					verdict = "None"
				}
				fmt.Fprintf(out, "%s %s %s\n", r.TaskID, r.State, verdict)
			}
			if e.Keep {
				fmt.Fprintf(out, "kept agentgroup/%s\n", e.Name)
			} else {
				fmt.Fprintf(out, "deleted agentgroup/%s\n", e.Name)
			}
			return nil
		}),
	}
	f := cmd.Flags()
	f.StringVar(&e.Agent, "agent", "", "the agent to evaluate (required)")
	f.IntVar(&e.MaxActive, "max-active", 0, "how many cases run at once (default 10)")
	f.StringVar(&e.MaxCostUSD, "max-cost", "", "the group's spend cap in dollars")
	f.StringVar(&e.Environment, "environment", "", "the Environment as NAME@VERSION (required)")
	f.StringVar(&e.Split, "split", "test", "the split to draw tasks from")
	f.IntVar(&e.Tasks, "tasks", 0, "how many tasks (default: the whole split, up to 100 cases)")
	f.IntVar(&e.Repetitions, "repetitions", 1, "runs per task")
	f.Int64Var(&e.Seed, "seed", 0, "picks the tasks: the same seed picks the same tasks")
	f.StringVar(&e.Timeout, "timeout", "30m", "the evaluation's absolute deadline, 1m to 24h")
	f.BoolVar(&e.Keep, "keep", false, "keep the group afterwards (default: delete it, with its runs)")
	f.StringVarP(&output, "output", "o", "", "output: json or yaml (default: the seed example's lines)")
	return cmd
}

func envCmd() *cobra.Command {
	cmd := groupCmd("env", "Load and list evaluation Environments", "environments")
	cmd.AddCommand(envLoadCmd(), envListCmd())
	return cmd
}

func envListCmd() *cobra.Command {
	return listVerb[client.Environment]{use: "list", short: "List the built-in and loaded environments",
		fetch:  (*client.Client).ListEnvironments,
		header: []string{"ENVIRONMENT", "GRADER", "SPLITS", "SOURCE"},
		rows: rowEach(func(e client.Environment) []string {
			var splits []string
			for s, n := range e.Status.Tasks {
				splits = append(splits, fmt.Sprintf("%s=%d", s, n))
			}
			sort.Strings(splits)
			src := "loaded"
			if e.Status.Builtin {
				src = "built in"
			}
			return []string{e.Metadata.Name + "@" + e.Spec.Version, e.Spec.Grader.Kind, strings.Join(splits, ","), src}
		}),
		value: func(envs []client.Environment) any { return envs }}.cmd()
}

func envLoadCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "load DIR | ARCHIVE.tar.gz | FILE.yaml",
		Short: "Load an Environment version (immutable: load a new version to change it)",
		Long: `Load an evaluation Environment from a folder, a .tar.gz archive of one, or a single YAML file.
The folder holds environment.yaml (kind: Environment; metadata.name; spec.version; spec.grader;
spec.splits, optional) and, optionally, splits/SPLIT.jsonl files with one task per line
({"id": ..., "prompt": ..., "answer": ...}). A grader's script may be given as "@FILE" to read
FILE from the folder. Answers are hidden: only graders see them, never the agent.`,
		Example: `  agentrun env load ./my-env
  agentrun env load my-env-1.2.0.tar.gz`,
		Args: exactArgs(1, "the folder, archive or file"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			env, err := readEnvironment(args[0])
			if err != nil {
				return err
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			_, res, err := c.LoadEnvironment(ctxOf(cmd), env)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "environment/%s@%s %s\n", env.Metadata.Name, env.Spec.Version, res)
			return nil
		}),
	}
}

// readEnvironment reads an environment from a folder, an archive or a YAML/JSON file.
func readEnvironment(path string) (*api.Environment, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, usageError("%v", err)
	}
	files := map[string][]byte{}
	switch {
	case st.IsDir():
		err = filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(path, p)
			b, err := os.ReadFile(p)
			files[filepath.ToSlash(rel)] = b
			return err
		})
	case strings.HasSuffix(path, ".tar.gz") || strings.HasSuffix(path, ".tgz"):
		files, err = readTarGz(path)
	default:
		var b []byte
		b, err = os.ReadFile(path)
		files["environment.yaml"] = b
	}
	if err != nil {
		return nil, err
	}
	// An archive may hold one top folder.
	if _, ok := files["environment.yaml"]; !ok {
		for name := range files {
			if dir, rest, ok := strings.Cut(name, "/"); ok && rest == "environment.yaml" {
				sub := map[string][]byte{}
				for n, b := range files {
					if r, ok := strings.CutPrefix(n, dir+"/"); ok {
						sub[r] = b
					}
				}
				files = sub
				break
			}
		}
	}
	doc, ok := files["environment.yaml"]
	if !ok {
		doc, ok = files["environment.json"]
	}
	if !ok {
		return nil, fmt.Errorf("%s has no environment.yaml", path)
	}
	j, err := api.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	var env api.Environment
	if err := api.DecodeStrict(j, &env); err != nil {
		return nil, fmt.Errorf("environment.yaml: %w", err)
	}
	if s, ok := strings.CutPrefix(env.Spec.Grader.Script, "@"); ok {
		b, ok := files[s]
		if !ok {
			return nil, fmt.Errorf("the grader's script %s is not in %s", s, path)
		}
		env.Spec.Grader.Script = string(b)
	}
	var names []string
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		split, ok := strings.CutPrefix(n, "splits/")
		if !ok || !strings.HasSuffix(split, ".jsonl") {
			continue
		}
		split = strings.TrimSuffix(split, ".jsonl")
		if env.Spec.Splits == nil {
			env.Spec.Splits = map[string][]api.Task{}
		}
		sc := bufio.NewScanner(bytes.NewReader(files[n]))
		sc.Buffer(make([]byte, 1<<20), 1<<22)
		for line := 1; sc.Scan(); line++ {
			if strings.TrimSpace(sc.Text()) == "" {
				continue
			}
			var t api.Task
			if err := json.Unmarshal(sc.Bytes(), &t); err != nil {
				return nil, fmt.Errorf("%s:%d: %v", n, line, err)
			}
			env.Spec.Splits[split] = append(env.Spec.Splits[split], t)
		}
	}
	return &env, nil
}

func readTarGz(path string) (map[string][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	tr := tar.NewReader(zr)
	files := map[string][]byte{}
	total := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(io.LimitReader(tr, 64<<20))
		if err != nil {
			return nil, err
		}
		if total += len(b); total > 256<<20 {
			return nil, fmt.Errorf("%s is larger than 256 MiB unpacked", path)
		}
		files[strings.TrimPrefix(filepath.ToSlash(filepath.Clean(h.Name)), "./")] = b
	}
}
