package app

import (
	"context"
	"log/slog"
	"time"

	"agentrun.dev/agentrun/internal/telemetry"
)

// startTelemetry installs the OTLP exporters the OTEL_* variables ask for (none: nothing).
func startTelemetry(ctx context.Context, log *slog.Logger) (*telemetry.Provider, error) {
	return telemetry.Start(ctx, "agentrun", log)
}

// flushTelemetry sends what is buffered before the process exits, waiting at most 10 s for a
// collector that does not answer.
func flushTelemetry(p *telemetry.Provider, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		log.Warn("OpenTelemetry flush at stop", "err", err)
	}
}
