package app

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/server"
	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/trigger"
)

// envDevClockFile names a file holding an RFC 3339 time that the trigger scheduler takes as now
// (test hooks only), so a test can walk a schedule across a daylight-saving change without
// waiting for it. Deliveries' timestamps are still checked against the real clock.
const envDevClockFile = "AGENTRUN_DEV_CLOCK_FILE"

// triggerScheduler makes the server's trigger controller (hooks and `triggers fire` use it) and
// returns its scheduler loop for runParts. Every server runs it: the store records each slot once.
func triggerScheduler(srv *server.Server, st store.Store, devHooks bool, log *slog.Logger) func(context.Context) {
	c := &trigger.Controller{Store: st, Prepare: srv.PrepareRun, Seal: srv.Seal, Log: log.With("part", "triggers"),
		Kick: func() {
			if srv.Groups != nil {
				srv.Groups.Kick()
			}
		}}
	if path := os.Getenv(envDevClockFile); path != "" {
		if devHooks {
			log.Warn(envDevClockFile + " is set: the trigger scheduler's clock reads it (test hooks)")
			c.Now, c.Every = fileClock(path), 100*time.Millisecond
		} else {
			log.Warn(envDevClockFile + " is ignored: the test hooks are off (--dev-hooks or " + envDev + "=1)")
		}
	}
	srv.Triggers = c
	return c.Run
}

// fileClock reads now from path at each call; the real clock while the file is missing or empty.
func fileClock(path string) func() time.Time {
	return func() time.Time {
		b, err := os.ReadFile(path)
		if err != nil {
			return time.Now()
		}
		t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(b)))
		if err != nil {
			return time.Now()
		}
		return t
	}
}
