package app

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/runner"
	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/store/sqlite"
)

// stopLog records the order in which parts stopped.
type stopLog struct {
	mu    sync.Mutex
	order []string
}

func (l *stopLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.order = append(l.order, s)
}

func (l *stopLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.order)
}

// loggingListener logs "http" the first time it is closed.
type loggingListener struct {
	net.Listener
	once sync.Once
	log  *stopLog
}

func (l *loggingListener) Close() error {
	l.once.Do(func() { l.log.add("http") })
	return l.Listener.Close()
}

// holdingDriver drives a run until its context ends, then writes to the store (as a drive that
// parks its run does) and records whether that write worked.
type holdingDriver struct {
	st      store.Store
	started chan struct{}
	log     *stopLog
}

func (d *holdingDriver) Drive(ctx context.Context, l store.Lease) error {
	close(d.started)
	<-ctx.Done()
	_, err := d.st.Commit(context.WithoutCancel(ctx), l, store.Write{Events: []api.Event{{Type: "run.note", Message: "stopping"}}, Release: true})
	if err != nil {
		d.log.add("runner (store write failed: " + err.Error() + ")")
	} else {
		d.log.add("runner")
	}
	return ctx.Err()
}

func newComposeParts(t *testing.T, log *stopLog) (parts, store.Store, *holdingDriver, string) {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "agentrun.db"))
	if err != nil {
		t.Fatal(err)
	}
	run := &api.AgentRun{Metadata: api.ObjectMeta{Name: "run-1"}, Spec: api.AgentRunSpec{Agent: "a", Input: "x"}, Status: api.AgentRunStatus{Phase: api.PhaseQueued, AgentRevision: 1}}
	if err := st.CreateRun(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	d := &holdingDriver{st: st, started: make(chan struct{}), log: log}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// The HTTP server's stop is logged when Shutdown closes its listener, which it does before it
	// returns (a RegisterOnShutdown hook runs in a goroutine of its own, so it could be logged
	// after the runner's stop and fail the order check on a busy machine).
	ln = &loggingListener{Listener: ln, log: log}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
	controller := func(name string) func(context.Context) {
		return func(ctx context.Context) {
			<-ctx.Done()
			// A controller's last pass still reaches the store: it closes after every part.
			if _, err := st.ListGroups(context.Background()); err != nil {
				log.add(name + " (store failed: " + err.Error() + ")")
				return
			}
			log.add(name)
		}
	}
	p := parts{http: hs, ln: ln, log: quiet,
		runner:      &runner.Runner{Name: "r1", Store: st, Driver: d, Log: quiet, PollEvery: 20 * time.Millisecond},
		controllers: map[string]func(context.Context){"groups": controller("groups"), "evaluator": controller("evaluator")}}
	return p, st, d, "http://" + ln.Addr().String()
}

// The composition root stops the parts in order, HTTP server, runner, controllers, and only then
// may the store close: every part's last store write works.
func TestRunPartsStopsInOrder(t *testing.T) {
	log := &stopLog{}
	p, st, d, url := newComposeParts(t, log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runParts(ctx, p) }()
	<-d.started
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("the HTTP part does not serve: %v", err)
	}
	resp.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("runParts: %v", err)
	}
	log.add("store")
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	got := log.get()
	if len(got) != 5 || got[0] != "http" || got[1] != "runner" || !slices.Contains(got[2:4], "groups") || !slices.Contains(got[2:4], "evaluator") || got[4] != "store" {
		t.Errorf("stop order %v, want http, runner, the two controllers (either order), store, each store write working", got)
	}
}

// A part that fails stops the others, in the same order, and runParts returns its error.
func TestRunPartsFailingPartStopsAll(t *testing.T) {
	log := &stopLog{}
	p, st, d, _ := newComposeParts(t, log)
	defer st.Close()
	p.controllers["broken"] = func(ctx context.Context) {
		<-d.started
		// returns while its context is live: a part that stopped by itself
	}
	err := runParts(context.Background(), p)
	if err == nil || !strings.Contains(err.Error(), "broken stopped by itself") {
		t.Fatalf("runParts = %v, want the broken part's error", err)
	}
	got := log.get()
	if len(got) != 4 || got[0] != "http" || got[1] != "runner" {
		t.Errorf("stop order %v, want http, runner, then the controllers", got)
	}
}
