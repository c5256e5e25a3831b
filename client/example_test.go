package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"

	"agentrun.dev/agentrun/client"
	"agentrun.dev/agentrun/internal/server"
	"agentrun.dev/agentrun/internal/store/sqlite"
)

// testServer is the real API handler over a real SQLite store in a temporary folder, without a
// runner: runs are recorded and stay Queued, which is all these examples need to show the calls.
// A program would use client.Discover or client.New with its server's address and token instead.
func testServer() (url, token string, stop func()) {
	dir, err := os.MkdirTemp("", "agentrun-example-")
	if err != nil {
		log.Fatal(err)
	}
	st, err := sqlite.Open(filepath.Join(dir, "agentrun.db"))
	if err != nil {
		log.Fatal(err)
	}
	token = "example-token-0123456789"
	s := &server.Server{Store: st, Token: token, BaseURL: "http://agentrun.example", DataDir: dir,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Tools: map[string]bool{"read": true, "write": true}}
	ts := httptest.NewServer(s.Handler())
	return ts.URL, token, func() {
		ts.Close()
		_ = st.Close()
		_ = os.RemoveAll(dir)
	}
}

// Apply an agent, start a capped run of it and read the run back.
func Example() {
	url, token, stop := testServer()
	defer stop()
	ctx := context.Background()
	c := client.New(url, token)

	a, res, err := c.ApplyAgent(ctx, &client.Agent{
		Metadata: client.ObjectMeta{Name: "notes"},
		Spec:     client.AgentSpec{System: "Take notes.", Tools: []string{"read", "write"}, PerRunMaxCostUSD: "0.50"},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(a.Metadata.Name, res)

	run, err := c.CreateAgentRun(ctx, &client.AgentRun{
		Metadata: client.ObjectMeta{Name: "notes-1"},
		Spec:     client.AgentRunSpec{Agent: "notes", Input: "Write notes.md about the meeting.", MaxCostUSD: "0.25"},
	})
	if err != nil {
		log.Fatal(err)
	}
	got, err := c.GetAgentRun(ctx, run.Metadata.Name)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got.Metadata.Name, got.Status.Phase, got.Spec.MaxCostUSD)
	// Output:
	// notes created
	// notes-1 Queued 0.25
}

// A refusal is an *client.Error carrying the server's code and the field it names.
func Example_errors() {
	url, token, stop := testServer()
	defer stop()
	ctx := context.Background()
	c := client.New(url, token)

	_, err := c.CreateAgentRun(ctx, &client.AgentRun{
		Metadata: client.ObjectMeta{Name: "orphan"},
		Spec:     client.AgentRunSpec{Agent: "nobody", Input: "hello"},
	})
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println(e.Status, e.Code, e.Field, e.Code == client.CodeAgentNotFound)
	}

	_, err = c.GetAgent(ctx, "missing")
	if errors.As(err, &e) {
		fmt.Println(e.Status, e.Code)
	}
	// Output:
	// 404 AgentNotFound spec.agent true
	// 404 NotFound
}
