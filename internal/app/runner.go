package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"agentrun.dev/agentrun/internal/metrics"
	"agentrun.dev/agentrun/internal/model"
	"agentrun.dev/agentrun/internal/server"
)

func newLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}

// newRunnerCmd is `agentrun runner`: a runner process without the API, for scaling out on
// PostgreSQL (AGENTRUN_STORE_URL) beside a `serve --no-runner` server.
func newRunnerCmd() *cobra.Command {
	var (
		data, name, logLevel, metricsAddr string
		ro                                runnerOptions
		wo                                webhookOptions
	)
	cmd := &cobra.Command{
		Use:   "runner --name NAME",
		Short: "Run a runner: claim runs from the store and drive them (scale out on PostgreSQL)",
		Long: `Start a runner process. It claims runs from the store named by AGENTRUN_STORE_URL (every process
of one deployment uses the same store and AGENTRUN_SEAL_KEY), drives many at once, renews its
leases, and takes over a dead runner's runs once their 30-second lease runs out. Run folders are
restored from the store, so runners need no shared disk; --data is only a local cache.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := ro.validate(); err != nil {
				return err
			}
			if err := wo.validate(); err != nil {
				return err
			}
			if name == "" {
				host, _ := os.Hostname()
				name = "runner-" + host
			}
			dir, log, err := startProcess(data, logLevel)
			if err != nil {
				return err
			}
			if err := applyDevHooks(ro.DevHooks, log); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			tel, err := startTelemetry(ctx, log)
			if err != nil {
				return err
			}
			defer flushTelemetry(tel, log)
			st, storeDesc, err := openStore(ctx, dir)
			if err != nil {
				return err
			}
			defer st.Close()
			models := model.ConfigFromEnv(os.Getenv, &http.Client{Timeout: 10 * time.Minute})
			moneyDesc, err := ro.loadMoney(dir)
			if err != nil {
				return err
			}
			if err := useStore(ctx, st, ro.seal, ro.sealFrom, log); err != nil {
				return err
			}
			useStoredModelKeys(models, st, ro.seal)
			fmt.Fprintf(os.Stderr, "  money:     %s\n", moneyDesc)
			ro.liveText = liveTextHub(st, false)
			r := newRunner(st, models, dir, name, ro, log)
			p := parts{runner: r, controllers: map[string]func(context.Context){}, log: log}
			// Runners deliver webhooks too (the servers prune their history).
			p.controllers["webhooks"] = webhookDispatcher(st, ro.seal, wo, 0, log).Run
			prof, err := pprofPart()
			if err != nil {
				return err
			}
			if prof != nil {
				p.controllers["pprof"] = prof
			}
			if metricsAddr != "" {
				ln, err := net.Listen("tcp", metricsAddr)
				if err != nil {
					return fmt.Errorf("--metrics-addr: %w", err)
				}
				mux := http.NewServeMux()
				mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
					metrics.Default.Write(w)
				})
				// Probes for an orchestrator: alive, and ready once claiming (see
				// docs/scale-out-and-deploy.md, "Health checks").
				server.Health{Store: st, Runner: r.Ready}.Routes(mux)
				// Bounded like the API server's (timeouts, 64 connections): it may face a network.
				p.http, p.ln = server.NewHTTPServer(mux, server.HTTPOptions{MaxConns: 64}), ln
				fmt.Fprintf(os.Stderr, "  metrics:   http://%s/metrics\n", ln.Addr())
			}
			fmt.Fprintf(os.Stderr, "agentrun runner %s (%s) started\n  store:     %s\n  data:      %s\n", name, version, storeDesc, dir)
			// The parts stop in order before the store closes (the deferred Close above).
			err = runParts(ctx, p)
			fmt.Fprintf(os.Stderr, "agentrun runner %s stopped\n", name)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "name", "", "runner name, unique in the deployment (default runner-HOSTNAME)")
	f.StringVar(&data, "data", "", "local folder for run folders (default $AGENTRUN_HOME or ~/.agentrun)")
	ro.flags(f)
	wo.flags(f)
	f.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	f.StringVar(&metricsAddr, "metrics-addr", "", "serve /metrics, /healthz and /readyz on this address (e.g. 127.0.0.1:9108)")
	return cmd
}
