package client

import (
	"go/importer"
	"go/token"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// outsideProgram uses the client as a program in another module would: it imports only
// agentrun.dev/agentrun/client, and builds every input the methods take from the aliases here.
const outsideProgram = `package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"agentrun.dev/agentrun/client"
)

func main() {
	ctx := context.Background()
	c := client.New("http://127.0.0.1:1", "token")

	agent := &client.Agent{
		Metadata: client.ObjectMeta{Name: "notes", Labels: map[string]string{"team": "docs"}},
		Spec: client.AgentSpec{
			System:    "Take notes.",
			Model:     client.ModelSpec{Access: "Server", Families: []string{"haiku", "sonnet"}},
			Tools:     []string{"read", "write"},
			Computer:  &client.ComputerSpec{Kind: "sandbox"},
			Approvals: &client.Approvals{Default: "ask", Rules: []client.ApprovalRule{{Match: "read", Action: "allow"}}},
		},
	}
	a, res, err := c.ApplyAgent(ctx, agent)
	fmt.Println(a, res == client.Created, err)

	// An AgentRunList batch.
	batch := []client.AgentRun{
		{Metadata: client.ObjectMeta{Name: "first"}, Spec: client.AgentRunSpec{Agent: "notes", Input: "one", MaxCostUSD: "0.50"}},
		{Metadata: client.ObjectMeta{Name: "second"}, Spec: client.AgentRunSpec{Agent: "notes", Input: "two", DependsOn: []string{"first"}, Deadline: "30m"}},
	}
	runs, err := c.CreateAgentRuns(ctx, batch, "batch-1")
	for _, r := range runs {
		var st client.AgentRunStatus = r.Status
		if st.Phase == client.PhaseWaiting && st.Reason == client.ReasonApproval && st.WaitingOn != nil {
			fmt.Println(st.WaitingOn.Detail)
		}
		if st.Cost != nil {
			fmt.Println(st.Cost.TotalUSD)
		}
		var turns []client.Turn = st.Turns
		var answer *client.Answer = st.Answer
		fmt.Println(len(turns), answer, client.Finished(st.Phase), client.WaitingOnPerson(st.Phase, st.Reason))
	}
	if e, ok := client.AsError(err); ok && e.Code == client.CodeIdempotencyReused {
		fmt.Println(e.Message)
	}
	var apiErr *client.Error
	fmt.Println(errors.As(err, &apiErr))

	run, _, err := c.ApplyAgentRun(ctx, &client.AgentRun{Metadata: client.ObjectMeta{Name: "third"}, Spec: client.AgentRunSpec{Agent: "notes", Input: "three"}})
	fmt.Println(run, err)

	// An AgentGroup with nested structs: limits and an evaluation.
	g, err := c.CreateAgentGroup(ctx, &client.AgentGroup{
		Metadata: client.ObjectMeta{Name: "eval-1"},
		Spec: client.AgentGroupSpec{
			Agent:      "notes",
			Limits:     client.GroupLimits{MaxActive: 4, MaxCostUSD: "2.00"},
			Evaluation: &client.EvaluationSpec{Environment: "arith@1", Split: "test", Tasks: 10, Repetitions: 2, Timeout: "10m"},
		},
	})
	if err == nil {
		var counts client.GroupCounts = g.Status.Counts
		fmt.Println(counts, g.Status.Phase == client.GroupSucceeded)
		if ev := g.Status.Evaluation; ev != nil {
			fmt.Println(client.Score(ev.PassRate), client.Score(ev.MeanReward))
			var per []client.TaskResult = ev.PerTask
			var cases []client.EvalCase = ev.Results
			fmt.Println(len(per), len(cases))
		}
	}
	env, _, err := c.LoadEnvironment(ctx, &client.Environment{Metadata: client.ObjectMeta{Name: "arith"},
		Spec: client.EnvironmentSpec{Version: "1", Grader: client.GraderSpec{Kind: "exact"},
			Splits: map[string][]client.Task{"test": {{ID: "t1", Prompt: "1+1?", Answer: []byte(` + "`" + `"2"` + "`" + `)}}}}})
	fmt.Println(env, err)

	var steps []client.Step
	steps, err = c.Steps(ctx, "first")
	events, _ := c.Events(ctx, "first", 0)
	var ev client.Event
	if len(events) > 0 {
		ev = events[0]
	}
	var list client.List[client.AgentRun]
	list.Items = batch
	fmt.Println(len(steps), ev.Type, len(list.Items), client.APIVersion, client.DefaultEvalTimeout > time.Minute, err)
}
`

// moduleRoot is the directory of this module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// TestOutsideModule builds a program in another module that imports only this package: it must
// be able to build every input of CreateAgentRuns, CreateAgentGroup, ApplyAgent and ApplyAgentRun
// and read what they return (package internal/api is out of its reach).
func TestOutsideModule(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH: cannot build a program in another module")
	}
	if testing.Short() {
		t.Skip("builds a module (-short)")
	}
	root := moduleRoot(t)
	dir := t.TempDir()
	gomod := "module example.com/outside\n\ngo 1.26\n\nrequire agentrun.dev/agentrun v0.0.0\n\nreplace agentrun.dev/agentrun => " + root + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	// The module's own checksums cover the dependencies the client needs. The build uses the go
	// command's own module settings (GOPROXY as configured): on a machine whose module cache is empty
	// the outside module's graph needs modules this module's build never downloaded.
	if sum, err := os.ReadFile(filepath.Join(root, "go.sum")); err == nil {
		os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(outsideProgram), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goBin, "build", "-o", filepath.Join(dir, "outside"), ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build of a module importing only the client: %v\n%s", err, out)
	}
}

// TestAliasesCoverTheAPI walks every exported function, method and type of this package, and the
// fields of every type they reach: each named type of package internal/api it meets must be named
// here too (an alias in types.go), or a caller outside the module could not write it.
func TestAliasesCoverTheAPI(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH: the source importer needs it")
	}
	pkg, err := importer.ForCompiler(token.NewFileSet(), "source", nil).Import("agentrun.dev/agentrun/client")
	if err != nil {
		t.Fatal(err)
	}
	aliased := map[string]bool{}
	for _, n := range pkg.Scope().Names() {
		if a, ok := pkg.Scope().Lookup(n).Type().(*types.Alias); ok {
			if nt, ok := types.Unalias(a).(*types.Named); ok && nt.Obj().Name() == n {
				aliased[nt.Obj().Pkg().Path()+"."+n] = true
			}
		}
	}
	seen := map[string]bool{}
	var missing []string
	var walk func(types.Type)
	walk = func(t types.Type) {
		switch t := t.(type) {
		case *types.Alias:
			walk(types.Unalias(t))
		case *types.Named:
			o := t.Obj()
			if o.Pkg() == nil || !strings.HasPrefix(o.Pkg().Path(), "agentrun.dev/") {
				return
			}
			key := o.Pkg().Path() + "." + o.Name()
			if seen[key] {
				return
			}
			seen[key] = true
			if strings.Contains(o.Pkg().Path(), "/internal/") && !aliased[key] {
				missing = append(missing, key)
			}
			walk(t.Underlying())
			ms := types.NewMethodSet(types.NewPointer(t))
			for i := 0; i < ms.Len(); i++ {
				if ms.At(i).Obj().Exported() {
					walk(ms.At(i).Type())
				}
			}
		case *types.Pointer:
			walk(t.Elem())
		case *types.Slice:
			walk(t.Elem())
		case *types.Array:
			walk(t.Elem())
		case *types.Map:
			walk(t.Key())
			walk(t.Elem())
		case *types.Chan:
			walk(t.Elem())
		case *types.Signature:
			for i := 0; i < t.Params().Len(); i++ {
				walk(t.Params().At(i).Type())
			}
			for i := 0; i < t.Results().Len(); i++ {
				walk(t.Results().At(i).Type())
			}
		case *types.Struct:
			for i := 0; i < t.NumFields(); i++ {
				if t.Field(i).Exported() {
					walk(t.Field(i).Type())
				}
			}
		}
	}
	for _, n := range pkg.Scope().Names() {
		if o := pkg.Scope().Lookup(n); o.Exported() {
			walk(o.Type())
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("types a caller of package client meets but cannot name (add an alias in types.go): %s", strings.Join(missing, ", "))
	}
	if len(seen) < 20 {
		t.Errorf("the walk reached only %d types: %v", len(seen), seen)
	}
}
