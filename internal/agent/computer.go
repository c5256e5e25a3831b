package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/catalog"
	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/computer/providers"
	"agentrun.dev/agentrun/internal/journal"
	"agentrun.dev/agentrun/internal/model"
	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/tools"
)

// computerKind is the kind of computer the run's agent revision works on.
func (d *drive) computerKind() computer.Kind { return kindOf(d.spec) }

func kindOf(spec *api.AgentSpec) computer.Kind {
	if spec == nil || spec.Computer == nil || spec.Computer.Kind == "" {
		return computer.KindNone
	}
	return computer.Kind(spec.Computer.Kind)
}

// ComputerTools names the tools that come with a computer of kind (see catalog.ComputerTools):
// with a sandbox or a desktop, the file tools, which work on the run folder it mounts at
// /workspace, then the kind's own.
func ComputerTools(kind computer.Kind) []string { return catalog.ComputerTools(string(kind)) }

// OfferedTools names the tools a run of an agent with spec is offered, in the order the model is
// told about them: api.OfferedTools, which is the agent's status.tools too.
func OfferedTools(spec *api.AgentSpec) []string { return api.OfferedTools(spec) }

// comesWithComputer reports whether a tool comes with the run's computer.
func (d *drive) comesWithComputer(name string) bool {
	e, ok := catalog.Lookup(name)
	return ok && e.Brings(string(d.computerKind()))
}

// computerTool returns the definition of a tool of the run's computer kind.
func (d *drive) computerTool(name string) (computer.ToolDef, bool) {
	td, ok := computer.LookupTool(name)
	if !ok || !computer.Has(d.computerKind(), td) || td.Kind == computer.KindNone {
		return computer.ToolDef{}, false
	}
	return td, true
}

// computerToolDefs are the definitions of the tools OfferedTools names but the MCP servers': a
// built-in tool's (or ask_person's) from internal/tools, a computer tool's from its kind.
func (d *drive) computerToolDefs() ([]model.ToolDef, error) {
	var out []model.ToolDef
	for _, n := range OfferedTools(d.spec) {
		if _, _, ok := catalog.SplitMCPName(n); ok {
			continue // described by its server when it starts (mcpToolDefs)
		}
		if td, ok := d.computerTool(n); ok {
			out = append(out, model.ToolDef{Name: td.Name, Description: td.Description, InputSchema: td.Schema})
			continue
		}
		if e, ok := catalog.Lookup(n); ok && (n == catalog.WebFetchName || n == catalog.SkillName || n == catalog.NoteName) {
			out = append(out, model.ToolDef{Name: e.Name, Description: e.Description, InputSchema: e.Schema})
			continue
		}
		defs, err := tools.Definitions([]string{n})
		if err != nil {
			return nil, err
		}
		out = append(out, model.ToolDef{Name: defs[0].Name, Description: defs[0].Description, InputSchema: defs[0].Schema})
	}
	return out, nil
}

// ensureComputer creates the run's computer around its folder the first time a tool needs it in
// this drive. Creating it is a journaled step the first time; after a restart (or a takeover) the
// computer is created again around the same folder, which the timeline says.
func (d *drive) ensureComputer(ctx context.Context) (computer.Computer, error) {
	if d.comp != nil {
		return d.comp, nil
	}
	if d.e.Computers == nil {
		return nil, &failure{api.ReasonToolError, "this runner has no computer providers"}
	}
	// Making a computer is an effect outside the run folder that no intent commit precedes: a
	// model reply still on its way to the store lands first (journal.Spec.Ahead).
	if err := d.j.Settle(ctx); err != nil {
		return nil, err
	}
	kind := d.computerKind()
	provider := ""
	if d.spec.Computer != nil {
		provider = d.spec.Computer.Provider
	}
	p, err := d.e.Computers.Resolve(ctx, kind, provider, providers.Preference(kind)...)
	if err != nil {
		return nil, &failure{api.ReasonToolError, fmt.Sprintf("cannot make the run's %s computer on runner %s: %v", kind, d.e.RunnerName, err)}
	}
	// A slow one-time setup (the docker images' builds): the timeline says what the run waits on.
	var ready func(context.Context) (bool, string)
	var prepare func(context.Context) error
	if kp, ok := p.(computer.KindPreparer); ok {
		ready = func(ctx context.Context) (bool, string) { return kp.ReadyKind(ctx, kind) }
		prepare = func(ctx context.Context) error { return kp.PrepareKind(ctx, kind) }
	} else if prep, ok := p.(computer.Preparer); ok {
		ready, prepare = prep.Ready, prep.Prepare
	}
	if ready != nil {
		if ok, what := ready(ctx); !ok {
			start := time.Now()
			d.j.Emit(api.Event{Type: api.EventComputerPreparing, Message: fmt.Sprintf("waiting for the %s provider: %s", p.Name(), what)})
			if err := prepare(ctx); err != nil {
				return nil, fmt.Errorf("prepare %s provider for %s computers: %w", p.Name(), kind, err)
			}
			d.j.Emit(api.Event{Type: api.EventComputerPrepared, Message: fmt.Sprintf("%s provider ready after %s", p.Name(), time.Since(start).Round(100*time.Millisecond))})
		}
	}
	spec := computer.Spec{Run: d.run.Metadata.Name, Folder: d.folder, Kind: kind, Network: d.spec.Computer != nil && d.spec.Computer.Network, Limits: computer.DefaultLimits,
		Mounts: d.computerMounts()}
	live := d.e.liveComputers()
	kept := live.Peek(spec.Run) != nil
	c, err := live.Get(ctx, p.Name(), spec)
	if err != nil {
		return nil, fmt.Errorf("create %s computer (%s): %w", kind, p.Name(), err)
	}
	d.comp = c
	if kept && live.Peek(spec.Run) == c {
		// Kept on this runner while the run waited: same computer, background processes and all.
		return c, nil
	}
	info := map[string]any{"kind": kind, "provider": p.Name(), "network": spec.Network, "info": c.Info()}
	if st, ok := d.j.Lookup("computer"); ok && st.State == api.StepCompleted {
		d.j.Emit(api.Event{Type: api.EventComputerRecreated, Message: fmt.Sprintf("%s %s created again around the run folder on runner %s", p.Name(), kind, d.e.RunnerName)})
		return c, nil
	}
	if _, err := d.j.Record(ctx, journal.Spec{Key: "computer", Kind: api.StepKindComputer, Title: fmt.Sprintf("create %s computer (%s)", kind, p.Name()),
		Args: map[string]any{"kind": kind, "provider": p.Name()}}, info); err != nil {
		return nil, err
	}
	return c, nil
}

// endDrive settles the run's computer when a drive ends: a run parked waiting on someone (a
// message, an answer, an approval, money) keeps it, background processes and all, as long as it
// stays on this runner; a run that ended, or that this drive lost, has it stopped.
func (d *drive) endDrive() {
	d.closeMCP()
	e := d.e
	e.mu.Lock()
	next := e.driving[d.run.Metadata.Name]
	if next == d {
		delete(e.driving, d.run.Metadata.Name)
	}
	e.mu.Unlock()
	if next != nil && next != d {
		// The run parked, was claimed again and is driven by the next drive already: the
		// computer is that drive's now.
		return
	}
	if e.live == nil || e.live.Peek(d.run.Metadata.Name) == nil {
		return
	}
	if d.parked && d.status.Phase == api.PhaseWaiting {
		return
	}
	if err := e.live.Close(d.run.Metadata.Name); err != nil {
		d.log.Warn("close computer", "err", err)
	}
}

// computerResult is a computer call's recorded result: the tool result the model reads, and a
// foreground command's own result (computer.Result.Exec), which a workflow's shell node reads
// back from the step (wfHost.Shell), on a replay too.
type computerResult struct {
	tools.Result
	Exec *computer.ExecResult `json:",omitempty"`
}

// computerCall runs (or replays) one call of a computer tool as a journal step.
func (d *drive) computerCall(ctx context.Context, key string, td computer.ToolDef, call model.Block, in catalog.Input) (journal.Outcome, error) {
	spec := journal.Spec{Key: key, Kind: api.StepKindTool, Title: call.Name + " " + summarize(in), Args: map[string]any{"tool": call.Name, "input": call.Input}, Safe: td.ReadOnly || td.Repeatable, Concurrent: true}
	if !td.ReadOnly {
		spec.Files = d.filesOf(key)
	}
	if st, ok := d.j.Lookup(key); !ok || st.State != api.StepCompleted {
		// Make the computer (its own step) before the call's step starts, so the journal reads
		// in the order things happened.
		if _, err := d.ensureComputer(ctx); err != nil {
			return journal.Outcome{}, err
		}
	}
	out, err := d.j.Do(ctx, spec, func(ctx context.Context) (any, *int64, error) {
		// The effect runs outside a workflow's drive lock (journal.Gate): what it reads or
		// changes of the drive, it does under it.
		var c computer.Computer
		var err error
		d.j.Locked(func() { c, err = d.ensureComputer(ctx) })
		if err != nil {
			return nil, nil, err
		}
		r, err := computer.RunInput(ctx, c, in)
		for again := true; errors.Is(err, computer.ErrClosed) && ctx.Err() == nil; again = false {
			// The computer died (not the agent's doing): the next call gets a new one around the folder.
			d.j.Locked(func() {
				d.e.liveComputers().Forget(d.run.Metadata.Name, c)
				c.Close()
				if d.comp == c {
					d.comp = nil
				}
			})
			if !errors.Is(err, computer.ErrNotStarted) && !spec.Safe {
				// The call may have run part way (a command that appended to a file, then filled
				// the memory): repeating it could do its effect twice, so a person decides.
				return nil, nil, &journal.Interrupted{Err: fmt.Errorf("the %s computer died during the call: %w", d.computerKind(), err)}
			}
			if !again {
				break
			}
			// It never started, or it changes nothing: make it once more on a new computer.
			if d.j.Locked(func() { c, err = d.ensureComputer(ctx) }); err != nil {
				return nil, nil, err
			}
			r, err = computer.RunInput(ctx, c, in)
		}
		if err != nil {
			return nil, nil, err
		}
		return computerResult{Result: tools.Result{Content: r.Content, IsError: r.IsError, Images: r.Images}, Exec: r.Exec}, nil, nil
	})
	if err != nil {
		return journal.Outcome{}, err
	}
	return out, nil
}

// loadImages reads a tool result's pictures from the run folder for the model. One that is gone
// (a person deleted it) is named in the text instead, so the model knows it is missing.
func (d *drive) loadImages(paths []string, content string) ([]model.Image, string) {
	var out []model.Image
	for _, p := range paths {
		data, err := tools.ReadInFolder(d.folder, p)
		if err != nil {
			content += fmt.Sprintf("\n(the image %s could not be read from the run folder: %v)", p, err)
			continue
		}
		mt := "image/png"
		if strings.HasSuffix(strings.ToLower(p), ".jpg") || strings.HasSuffix(strings.ToLower(p), ".jpeg") {
			mt = "image/jpeg"
		}
		out = append(out, model.Image{MediaType: mt, Data: data})
	}
	return out, content
}

// liveComputers are the computers this engine keeps, one per run.
func (e *Engine) liveComputers() *computer.Live {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.live == nil {
		e.live = &computer.Live{Registry: e.Computers}
	}
	return e.live
}

// Screen returns the screen of run's computer when the computer is live in this process (being
// driven, or kept while the run waits here) and can show one (a browser); false otherwise: no
// computer here (none made yet, the run is on another runner, or its computer was closed or lost
// with a restart), or one without a screen (a sandbox).
func (e *Engine) Screen(run string) (computer.Screen, bool) {
	e.mu.Lock()
	live := e.live
	e.mu.Unlock()
	if live == nil {
		return nil, false
	}
	s, ok := live.Peek(run).(computer.Screen)
	return s, ok
}

// Reap stops kept computers whose runs no longer wait here: the run ended, was deleted, or another
// runner holds it now (a message woke it and someone else claimed it). The runner calls it from
// time to time; computers of runs this engine is driving are left alone.
func (e *Engine) Reap(ctx context.Context) {
	e.mu.Lock()
	live := e.live
	driving := make(map[string]bool, len(e.driving))
	for r := range e.driving {
		driving[r] = true
	}
	e.mu.Unlock()
	if live == nil {
		return
	}
	for _, run := range live.Runs() {
		if driving[run] {
			continue
		}
		r, err := e.Store.GetRun(ctx, run)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			continue // ask again next time
		}
		if err == nil && (r.Status.Phase == api.PhaseWaiting || r.Status.Phase == api.PhaseQueued) {
			continue // still waiting, or about to be claimed (most likely here again)
		}
		// A drive of the run may have started here since the snapshot above (the run read as
		// Running is its own): its computer, and the harness or MCP servers inside, are not
		// closed under it. Taken under e.mu, so a drive registering now makes a new one.
		e.mu.Lock()
		var c computer.Computer
		if e.driving[run] == nil {
			c = live.Take(run)
		}
		e.mu.Unlock()
		if c != nil {
			if err := c.Close(); err != nil {
				e.Log.Warn("close computer", "run", run, "err", err)
			}
			// A run that ended while it waited (cancelled, past its deadline) with no drive
			// here: its harness home goes with the computer its harness ran in.
			if e.DataDir != "" && (err != nil || api.Finished(r.Status.Phase)) {
				if err := os.RemoveAll(harnessHome(e.DataDir, run)); err != nil {
					e.Log.Warn("remove the harness home", "run", run, "err", err)
				}
			}
		}
	}
}

// CloseAll stops every kept computer (the runner is stopping).
func (e *Engine) CloseAll() {
	e.mu.Lock()
	live := e.live
	e.mu.Unlock()
	if live != nil {
		live.CloseAll()
	}
	e.closeGateway()
}
