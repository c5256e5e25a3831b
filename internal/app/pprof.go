package app

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	"strconv"
	"time"

	"agentrun.dev/agentrun/internal/server"
)

// pprofPart serves Go's profiler on AGENTRUN_PPROF_ADDR (for example 127.0.0.1:6060) when it is
// set, so an operator can see where a server or runner spends its time: a part for runParts
// (nil when unset) that serves until its context ends. AGENTRUN_PPROF_MEMRATE, with it, sets
// the heap profile's sampling (runtime.MemProfileRate, bytes; Go's default 524288 attributes
// little of a heap of a few tens of MB): a smaller rate costs time on every allocation.
func pprofPart() (func(context.Context), error) {
	addr := os.Getenv("AGENTRUN_PPROF_ADDR")
	if addr == "" {
		return nil, nil
	}
	if v := os.Getenv("AGENTRUN_PPROF_MEMRATE"); v != "" {
		rate, err := strconv.Atoi(v)
		if err != nil || rate < 1 {
			return nil, fmt.Errorf("AGENTRUN_PPROF_MEMRATE: %q is not a positive number of bytes", v)
		}
		runtime.MemProfileRate = rate
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("AGENTRUN_PPROF_ADDR: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	// Bounded like the API server, but a profile or trace is written for as long as it asks
	// (pprof refuses a duration past WriteTimeout).
	hs := server.NewHTTPServer(mux, server.HTTPOptions{WriteTimeout: 10 * time.Minute, MaxConns: 16})
	fmt.Fprintf(os.Stderr, "  pprof:     http://%s/debug/pprof/\n", ln.Addr())
	return func(ctx context.Context) {
		stop := context.AfterFunc(ctx, func() { hs.Close() })
		defer stop()
		hs.Serve(ln) // returns once Close has been called
	}, nil
}
