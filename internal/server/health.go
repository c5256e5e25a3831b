package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/store"
)

// Health serves /livez, /healthz and /readyz for a process: the API server and a runner's
// --metrics-addr. Three, because they answer three questions: is the process serving at all (a
// liveness probe that restarts it must not fire because the database is down, which a restart
// cannot mend), is it healthy with its store, and can it take work.
type Health struct {
	Store store.Store
	// Runner is the readiness of this process's runner part (nil: the process runs none, as
	// `serve --no-runner`).
	Runner func() error
	// Log gets what the caller is not told: why the store failed (nil: slog's default).
	Log *slog.Logger
}

// storeUnreachable is all a probe is told of a failing store: the driver's error names the
// database's user, name, host and port, for anyone who can reach the port. The log has it.
const storeUnreachable = "store: unreachable (the server's log says why)"

func (h Health) storeFailed(w http.ResponseWriter, r *http.Request, err error) {
	h.logger().Warn("health check: the store does not answer", "path", r.URL.Path, "err", err)
	unhealthy(w, "%s", storeUnreachable)
}

func (h Health) logger() *slog.Logger {
	if h.Log == nil {
		return slog.Default()
	}
	return h.Log
}

// Routes registers GET /livez, GET /healthz and GET /readyz on mux.
func (h Health) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /livez", Livez)
	mux.HandleFunc("GET /healthz", h.Healthz)
	mux.HandleFunc("GET /readyz", h.Readyz)
}

// Livez answers ok while the process serves HTTP, and asks nothing of the store: it is what a
// liveness probe that restarts the process should read.
func Livez(w http.ResponseWriter, r *http.Request) {
	io.WriteString(w, "ok\n")
}

// Healthz answers ok while the process serves and its store answers a cheap query in time: a
// process whose store fails is not healthy, however well its HTTP side runs.
func (h Health) Healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := h.Store.Ping(ctx); err != nil {
		h.storeFailed(w, r, err)
		return
	}
	io.WriteString(w, "ok\n")
}

// Readyz answers ok when the process can take work: the store answers, its schema is the one this
// binary knows (migrations current, not newer), and the runner part, if any, is claiming. The
// body names each check that failed, one a line.
func (h Health) Readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := h.Store.Ping(ctx); err != nil {
		h.storeFailed(w, r, err)
		return
	}
	var failed []string
	sc, err := h.Store.SchemaVersion(ctx)
	if err != nil {
		// The driver's error again: logged, not told.
		h.logger().Warn("health check: the store's schema version does not read", "path", r.URL.Path, "err", err)
		failed = append(failed, "schema: unreadable (the server's log says why)")
	} else if err := sc.Current(); err != nil {
		failed = append(failed, fmt.Sprintf("schema: %v", err)) // versions only
	}
	if h.Runner != nil {
		if err := h.Runner(); err != nil {
			failed = append(failed, fmt.Sprintf("runner: %v", err))
		}
	}
	if len(failed) > 0 {
		unhealthy(w, "%s", strings.Join(failed, "\n"))
		return
	}
	fmt.Fprintf(w, "ok (schema version %d)\n", sc.Version)
}

func unhealthy(w http.ResponseWriter, format string, args ...any) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusServiceUnavailable)
	fmt.Fprintf(w, format+"\n", args...)
}
