package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"golang.org/x/sync/errgroup"

	"agentrun.dev/agentrun/internal/runner"
)

// parts are the long-running parts of one process, owned by the composition root: runParts starts
// every one under one errgroup and stops them in order, so nothing outlives the store, which the
// caller closes after runParts returns.
type parts struct {
	// http serves on ln (nil: no HTTP server, as a runner without --metrics-addr).
	http httpPart
	ln   net.Listener
	// runner drives runs (nil: serve --no-runner).
	runner *runner.Runner
	// controllers run until their context ends (group admission, the evaluator).
	controllers map[string]func(ctx context.Context)
	// shutdownTimeout bounds the HTTP server's graceful stop (0: 10 s).
	shutdownTimeout time.Duration
	log             *slog.Logger
}

// httpPart is what runParts needs of an HTTP server (*server.HTTPServer, *http.Server).
type httpPart interface {
	Serve(net.Listener) error
	Shutdown(context.Context) error
	Close() error
}

// runParts runs the parts until ctx ends (a signal) or one of them fails, then stops them in
// order: the HTTP server first (no new requests; those in flight finish), then the runner (its
// drives end and give their runs back), then the controllers. It returns the first part's error.
func runParts(ctx context.Context, p parts) error {
	g, gctx := errgroup.WithContext(ctx)
	// Each stage has its own context: cancelled one after another, not all at once by gctx.
	runnerCtx, stopRunner := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRunner()
	ctlCtx, stopControllers := context.WithCancel(context.WithoutCancel(ctx))
	defer stopControllers()

	if p.http != nil {
		g.Go(func() error {
			if err := p.http.Serve(p.ln); !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("http server: %w", err)
			}
			return nil
		})
	}
	runnerDone := make(chan struct{})
	if p.runner != nil {
		g.Go(func() error {
			defer close(runnerDone)
			if err := p.runner.Run(runnerCtx); err != nil && !errors.Is(err, context.Canceled) {
				return fmt.Errorf("runner: %w", err)
			}
			return nil
		})
	} else {
		close(runnerDone)
	}
	for name, run := range p.controllers {
		g.Go(func() error {
			run(ctlCtx)
			if ctlCtx.Err() == nil {
				return fmt.Errorf("%s stopped by itself", name)
			}
			return nil
		})
	}
	g.Go(func() error {
		<-gctx.Done()
		if p.http != nil {
			timeout := p.shutdownTimeout
			if timeout <= 0 {
				timeout = 10 * time.Second
			}
			sctx, cancel := context.WithTimeout(context.Background(), timeout)
			if err := p.http.Shutdown(sctx); err != nil {
				// Requests still open (event streams) past the grace period are cut.
				p.log.Warn("http server: graceful stop cut short", "err", err)
				p.http.Close()
			}
			cancel()
		}
		stopRunner()
		<-runnerDone
		stopControllers()
		return nil
	})
	return g.Wait()
}
