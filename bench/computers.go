package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/computer/docker"
	"agentrun.dev/agentrun/internal/computer/local"
)

// ComputerResult is what making and using one provider's sandboxes costs: what a run's first tool
// call waits for (create), a command's round trip, a file written and read back, and closing.
type ComputerResult struct {
	Provider string `json:"provider"`
	// Skipped says why the provider was not measured here.
	Skipped string `json:"skipped,omitempty"`
	// Prepare is the one-time setup before the first sandbox (docker: the image build, 0 if built).
	PrepareMs float64 `json:"prepareMs"`
	Create    Dist    `json:"create"`
	Exec      Dist    `json:"exec"`
	File      Dist    `json:"fileWriteRead"`
	Close     Dist    `json:"close"`
	// Desktop is the provider's desktops, when it makes them here.
	Desktop *DesktopResult `json:"desktop,omitempty"`
}

// DesktopResult is what a desktop costs: making one (the X server started and answering), a
// screenshot as the model gets it (PNG) and as the console shows it (JPEG), and a click.
type DesktopResult struct {
	Create   Dist `json:"create"`
	Shot     Dist `json:"shotPng"`
	ShotKB   int  `json:"shotPngKB"`
	Frame    Dist `json:"frameJpeg"`
	FrameKB  int  `json:"frameJpegKB"`
	Click    Dist `json:"click"`
	CloseAll Dist `json:"close"`
}

// runComputers measures the sandbox providers available here, c.computers sandboxes each, ten
// `true` commands and one 64 KiB file round trip in each. The providers are used in this process,
// as a runner does: this bench binary is the sandbox helper they start.
func runComputers(c config, root string) ([]ComputerResult, error) {
	ctx := context.Background()
	var out []ComputerResult
	for _, p := range []computer.Provider{local.New(), docker.New()} {
		r := ComputerResult{Provider: p.Name()}
		if a := p.Available(ctx); !a.Available {
			r.Skipped = a.Reason
			progress("computers: %s skipped: %s", p.Name(), a.Reason)
			out = append(out, r)
			continue
		}
		if prep, ok := p.(computer.Preparer); ok {
			start := time.Now()
			if err := prep.Prepare(ctx); err != nil {
				return out, fmt.Errorf("prepare %s: %w", p.Name(), err)
			}
			r.PrepareMs = msf(time.Since(start))
		}
		progress("computers: %d %s sandboxes", c.computers, p.Name())
		var creates, execs, files, closes []time.Duration
		payload := make([]byte, 64<<10)
		for i := range payload {
			payload[i] = byte('a' + i%26)
		}
		for i := 0; i < c.computers; i++ {
			dir := filepath.Join(root, "computers", p.Name(), fmt.Sprintf("run-%03d", i))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return out, err
			}
			start := time.Now()
			comp, err := p.Create(ctx, computer.Spec{Run: fmt.Sprintf("bench-%d", i), Folder: dir, Kind: computer.KindSandbox})
			if err != nil {
				return out, fmt.Errorf("create %s sandbox: %w", p.Name(), err)
			}
			creates = append(creates, time.Since(start))
			s := comp.(computer.Sandbox)
			for j := 0; j < 10; j++ {
				start = time.Now()
				res, err := s.Exec(ctx, "true", computer.ExecOptions{})
				if err != nil || res.ExitCode != 0 {
					comp.Close()
					return out, fmt.Errorf("%s exec: exit %d, %v", p.Name(), res.ExitCode, err)
				}
				execs = append(execs, time.Since(start))
			}
			start = time.Now()
			if err := s.WriteFile(ctx, "bench.txt", payload); err != nil {
				comp.Close()
				return out, fmt.Errorf("%s write: %w", p.Name(), err)
			}
			if b, err := s.ReadFile(ctx, "bench.txt"); err != nil || len(b) != len(payload) {
				comp.Close()
				return out, fmt.Errorf("%s read: %d bytes, %v", p.Name(), len(b), err)
			}
			files = append(files, time.Since(start))
			start = time.Now()
			if err := comp.Close(); err != nil {
				return out, fmt.Errorf("close %s sandbox: %w", p.Name(), err)
			}
			closes = append(closes, time.Since(start))
		}
		r.Create, r.Exec, r.File, r.Close = dist(creates), dist(execs), dist(files), dist(closes)
		if kc, ok := p.(computer.KindChecker); ok && kc.KindAvailable(ctx, computer.KindDesktop).Available {
			d, err := benchDesktops(ctx, p, c.computers, filepath.Join(root, "computers", p.Name()+"-desktop"))
			if err != nil {
				return out, err
			}
			r.Desktop = d
		}
		out = append(out, r)
	}
	return out, nil
}

// benchDesktops makes n desktops with p, one at a time, and in each takes five screenshots of
// each kind and clicks five times.
func benchDesktops(ctx context.Context, p computer.Provider, n int, root string) (*DesktopResult, error) {
	progress("computers: %d %s desktops", n, p.Name())
	var creates, shots, frames, clicks, closes []time.Duration
	r := &DesktopResult{}
	for i := 0; i < n; i++ {
		dir := filepath.Join(root, fmt.Sprintf("run-%03d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		start := time.Now()
		comp, err := p.Create(ctx, computer.Spec{Run: fmt.Sprintf("bench-desktop-%d", i), Folder: dir, Kind: computer.KindDesktop})
		if err != nil {
			return nil, fmt.Errorf("create %s desktop: %w", p.Name(), err)
		}
		creates = append(creates, time.Since(start))
		d := comp.(computer.Desktop)
		for j := 0; j < 5; j++ {
			start = time.Now()
			png, err := d.Shot(ctx)
			if err != nil {
				comp.Close()
				return nil, fmt.Errorf("%s desktop screenshot: %w", p.Name(), err)
			}
			shots = append(shots, time.Since(start))
			r.ShotKB = len(png) >> 10
			start = time.Now()
			jpg, _, _, err := d.Frame(ctx)
			if err != nil {
				comp.Close()
				return nil, fmt.Errorf("%s desktop frame: %w", p.Name(), err)
			}
			frames = append(frames, time.Since(start))
			r.FrameKB = len(jpg) >> 10
			start = time.Now()
			if err := d.Mouse(ctx, 100+j*10, 100, "left", 1); err != nil {
				comp.Close()
				return nil, fmt.Errorf("%s desktop click: %w", p.Name(), err)
			}
			clicks = append(clicks, time.Since(start))
		}
		start = time.Now()
		if err := comp.Close(); err != nil {
			return nil, fmt.Errorf("close %s desktop: %w", p.Name(), err)
		}
		closes = append(closes, time.Since(start))
	}
	r.Create, r.Shot, r.Frame, r.Click, r.CloseAll = dist(creates), dist(shots), dist(frames), dist(clicks), dist(closes)
	return r, nil
}

func printComputers(rs []ComputerResult) {
	fmt.Println()
	fmt.Println("== computers: sandbox providers ==")
	for _, r := range rs {
		if r.Skipped != "" {
			fmt.Printf("  %s: skipped (%s)\n", r.Provider, r.Skipped)
			continue
		}
		fmt.Printf("  %s: one-time setup %.1f ms\n", r.Provider, r.PrepareMs)
		printDistHeader("ms")
		fmt.Print(r.Create.row(r.Provider + " create"))
		fmt.Print(r.Exec.row(r.Provider + " exec `true`"))
		fmt.Print(r.File.row(r.Provider + " write+read 64 KiB"))
		fmt.Print(r.Close.row(r.Provider + " close"))
		if d := r.Desktop; d != nil {
			fmt.Print(d.Create.row(r.Provider + " desktop create"))
			fmt.Print(d.Shot.row(fmt.Sprintf("%s desktop shot (PNG, %d KiB)", r.Provider, d.ShotKB)))
			fmt.Print(d.Frame.row(fmt.Sprintf("%s desktop frame (JPEG, %d KiB)", r.Provider, d.FrameKB)))
			fmt.Print(d.Click.row(r.Provider + " desktop click"))
			fmt.Print(d.CloseAll.row(r.Provider + " desktop close"))
		}
	}
}
