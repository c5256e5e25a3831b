package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/computer/providers"
	"agentrun.dev/agentrun/internal/journal"
	"agentrun.dev/agentrun/internal/model"
	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/tools"
)

// computerKind is the kind of computer the run's agent revision works on.
func (d *drive) computerKind() computer.Kind {
	if d.spec.Computer == nil || d.spec.Computer.Kind == "" {
		return computer.KindNone
	}
	return computer.Kind(d.spec.Computer.Kind)
}

// computerTool returns the definition of a tool of the run's computer kind.
func (d *drive) computerTool(name string) (computer.ToolDef, bool) {
	td, ok := computer.LookupTool(name)
	if !ok || td.Kind != d.computerKind() || td.Kind == computer.KindNone {
		return computer.ToolDef{}, false
	}
	return td, true
}

// computerToolDefs are the tools of the computer's kind: an agent gets them with its computer.
func (d *drive) computerToolDefs() []model.ToolDef {
	var out []model.ToolDef
	for _, td := range computer.Tools(d.computerKind()) {
		out = append(out, model.ToolDef{Name: td.Name, Description: td.Description, InputSchema: td.Schema})
	}
	return out
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
	kind := d.computerKind()
	provider := ""
	if d.spec.Computer != nil {
		provider = d.spec.Computer.Provider
	}
	pref := providers.SandboxPreference
	if kind == computer.KindBrowser {
		pref = []string{"chromium"}
	}
	p, err := d.e.Computers.Resolve(ctx, kind, provider, pref...)
	if err != nil {
		return nil, &failure{api.ReasonToolError, fmt.Sprintf("cannot make the run's %s computer on runner %s: %v", kind, d.e.RunnerName, err)}
	}
	spec := computer.Spec{Run: d.run.Metadata.Name, Folder: d.folder, Kind: kind, Network: d.spec.Computer != nil && d.spec.Computer.Network, Limits: computer.DefaultLimits}
	c, err := p.Create(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("create %s computer (%s): %w", kind, p.Name(), err)
	}
	d.comp = c
	info := map[string]any{"kind": kind, "provider": p.Name(), "network": spec.Network, "info": c.Info()}
	if st, ok := d.j.Lookup("computer"); ok && st.State == api.StepCompleted {
		d.j.Emit(api.Event{Type: "computer.recreated", Message: fmt.Sprintf("%s %s created again around the run folder on runner %s", p.Name(), kind, d.e.RunnerName)})
		return c, nil
	}
	if _, err := d.j.Record(ctx, journal.Spec{Key: "computer", Kind: "computer", Title: fmt.Sprintf("create %s computer (%s)", kind, p.Name()),
		Args: map[string]any{"kind": kind, "provider": p.Name()}}, info); err != nil {
		return nil, err
	}
	return c, nil
}

// closeComputer stops the run's computer at the end of a drive.
func (d *drive) closeComputer() {
	if d.comp != nil {
		if err := d.comp.Close(); err != nil {
			d.log.Warn("close computer", "err", err)
		}
		d.comp = nil
	}
}

// computerCall runs (or replays) one call of a computer tool as a journal step.
func (d *drive) computerCall(ctx context.Context, key string, td computer.ToolDef, call model.Block, result func(string, bool) model.Block) (model.Block, error) {
	spec := journal.Spec{Key: key, Kind: "tool", Title: call.Name + " " + summarize(call.Input), Args: map[string]any{"tool": call.Name, "input": call.Input}, Safe: td.ReadOnly}
	if !td.ReadOnly {
		spec.Files = func() ([]store.FileWrite, error) {
			next, writes, err := d.saved.changes(d.folder)
			if err != nil {
				return nil, err
			}
			d.saved = next
			return writes, nil
		}
	}
	if st, ok := d.j.Lookup(key); !ok || st.State != api.StepCompleted {
		// Make the computer (its own step) before the call's step starts, so the journal reads
		// in the order things happened.
		if _, err := d.ensureComputer(ctx); err != nil {
			return model.Block{}, err
		}
	}
	out, err := d.j.Do(ctx, spec, func(ctx context.Context) (any, *int64, error) {
		c, err := d.ensureComputer(ctx)
		if err != nil {
			return nil, nil, err
		}
		content, isErr, err := computer.Run(ctx, c, call.Name, call.Input)
		if errors.Is(err, computer.ErrClosed) {
			// The computer died (not the agent's doing): make a new one around the folder, once.
			d.comp = nil
			if c, err = d.ensureComputer(ctx); err != nil {
				return nil, nil, err
			}
			content, isErr, err = computer.Run(ctx, c, call.Name, call.Input)
		}
		if err != nil {
			return nil, nil, err
		}
		return tools.Result{Content: content, IsError: isErr}, nil, nil
	})
	if err != nil {
		return model.Block{}, err
	}
	if out.Skipped {
		return result("this call was interrupted by a crash and a person chose to skip it: it may or may not have taken effect; check before relying on it", true), nil
	}
	var r tools.Result
	if err := json.Unmarshal(out.Result, &r); err != nil {
		return model.Block{}, fmt.Errorf("decode %s result: %w", key, err)
	}
	return result(strings.TrimRight(r.Content, ""), r.IsError), nil
}
