package app

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/pflag"

	"agentrun.dev/agentrun/internal/journal"
	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/tools"
)

// The dev flag turns on the test hooks: the dev_count tool and a journal's pause point. It is
// explicit (serve/runner --dev-hooks, or AGENTRUN_DEV=1), read here once and passed down, so no
// library turns a hook on because an environment variable happens to be set.
const (
	envDev        = "AGENTRUN_DEV"
	envDevPauseAt = "AGENTRUN_DEV_PAUSE_AT"
)

func devHooksFlag(f *pflag.FlagSet, v *bool) {
	f.BoolVar(v, "dev-hooks", os.Getenv(envDev) == "1", "turn on the test hooks: the dev_count tool and $AGENTRUN_DEV_PAUSE_AT (default $AGENTRUN_DEV=1)")
	f.MarkHidden("dev-hooks")
}

// applyDevHooks passes the dev flag down before any part starts.
func applyDevHooks(on bool, log *slog.Logger) error {
	tools.EnableDevTools(on)
	pause := os.Getenv(envDevPauseAt)
	if !on {
		if pause != "" {
			log.Warn(envDevPauseAt + " is ignored: the test hooks are off (--dev-hooks or " + envDev + "=1)")
		}
		store.SetDevForkPause(false)
		return journal.SetDevPause("")
	}
	// "in-fork" stops a fork inside its store transaction (store.DevForkPause); any other point
	// is a journal's.
	store.SetDevForkPause(pause == "in-fork")
	if pause == "in-fork" {
		pause = ""
	}
	if err := journal.SetDevPause(pause); err != nil {
		return fmt.Errorf("%s: %w", envDevPauseAt, err)
	}
	log.Warn("test hooks are on (dev_count, " + envDevPauseAt + "): not for production")
	return nil
}
