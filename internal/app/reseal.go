package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"agentrun.dev/agentrun/internal/secret"
	"agentrun.dev/agentrun/internal/store"
)

// useStore marks the store in use by this serve or runner process (so `secrets reseal` refuses
// while it runs) and checks its seal key against the store's secrets: a key that opens none of
// them is refused, naming where it came from; one that opens only some logs the others.
func useStore(ctx context.Context, st store.Store, box *secret.Box, where string, log *slog.Logger) error {
	if r, ok := st.(store.Resealer); ok {
		if err := r.HoldInUse(ctx, func() {
			log.Warn("waiting for `agentrun secrets reseal` to finish on this store before starting")
		}); err != nil {
			return err
		}
	}
	list, err := st.ListSecrets(ctx)
	if err != nil {
		return fmt.Errorf("check the seal key: %w", err)
	}
	names := make([]string, len(list))
	for i, s := range list {
		names[i] = s.Name
	}
	bad, err := secret.Unopened(ctx, box, names, st.GetSecret)
	if err != nil {
		return err
	}
	switch {
	case len(bad) > 0 && len(bad) == len(names):
		return fmt.Errorf("the seal key (%s) opens none of the store's %d secrets: they were sealed under another key. Start every process with the key they were sealed under (after `agentrun secrets reseal`, the new one)", where, len(names))
	case len(bad) > 0:
		log.Warn("secrets that do not open with this seal key (sealed under another key): set them again", "seal_key", where, "secrets", strings.Join(bad, ","))
	}
	return nil
}

// envDevResealPause, with the test hooks on, makes a reseal stop after writing that many values,
// inside its transaction, until it is killed (the crash tests' hook).
const envDevResealPause = "AGENTRUN_DEV_RESEAL_PAUSE_AFTER"

// readKeyFrom reads a seal key from --from-key's argument: a file, - for stdin, or env:NAME.
func readKeyFrom(arg string, stdin io.Reader) ([]byte, error) {
	var text, what string
	switch {
	case arg == "-":
		b, err := io.ReadAll(io.LimitReader(stdin, 4096))
		if err != nil {
			return nil, fmt.Errorf("--from-key -: read stdin: %w", err)
		}
		text, what = string(b), "stdin"
	case strings.HasPrefix(arg, "env:"):
		name := strings.TrimPrefix(arg, "env:")
		v, ok := os.LookupEnv(name)
		if name == "" || !ok || strings.TrimSpace(v) == "" {
			return nil, fmt.Errorf("--from-key %s: the environment variable %s is not set", arg, name)
		}
		text, what = v, "environment variable "+name
	default:
		b, err := os.ReadFile(arg)
		if errors.Is(err, os.ErrNotExist) {
			if _, perr := secret.ParseKey(arg); perr == nil {
				return nil, errors.New("--from-key takes a file holding the old key, - (stdin) or env:NAME, never the key itself: keys do not go on the command line")
			}
			return nil, fmt.Errorf("--from-key %s: no such file (give a file holding the old key, - for stdin, or env:NAME)", arg)
		}
		if err != nil {
			return nil, fmt.Errorf("--from-key: %w", err)
		}
		text, what = string(b), arg
	}
	k, err := secret.ParseKey(text)
	if err != nil {
		return nil, fmt.Errorf("--from-key (%s): the old key must be 32 bytes as base64 or hex, as AGENTRUN_SEAL_KEY and seal.key hold it", what)
	}
	return k, nil
}

func newResealCmd() *cobra.Command {
	var data, fromKey string
	var devHooks bool
	cmd := &cobra.Command{
		Use:   "reseal --from-key FILE",
		Short: "Rotate the seal key: seal every secret in the store again under the current key (every process stopped)",
		Long: `Rotate the seal key. Every sealed value in the store (model and tool keys, MCP credentials,
trigger signing secrets: every secret) is opened with the old key and sealed under the new one,
in one transaction: all of them or none.

The old key comes from --from-key: a file holding it (as seal.key does), - for stdin, or
env:NAME for an environment variable; never the key itself. The new key is the one a process
started here would use: AGENTRUN_SEAL_KEY, else the data folder's seal.key (never generated
here). A secret the old key does not open is refused, naming it, before anything is written.

The store must not be in use: stop the server and every runner on it first (each holds the store
while it runs, and reseal refuses, saying who holds it). Then start every process with the new
key: a process whose key opens none of the store's secrets refuses to start.`,
		Example: `  # AGENTRUN_SEAL_KEY deployments: stop every process, then
  AGENTRUN_SEAL_KEY="$NEW" agentrun secrets reseal --from-key env:OLD_SEAL_KEY
  # a data folder's seal.key:
  mv ~/.agentrun/seal.key old.key && (umask 077; openssl rand -base64 32 > ~/.agentrun/seal.key)
  agentrun secrets reseal --from-key old.key`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if fromKey == "" {
				return errors.New("--from-key is required: a file holding the old seal key, - for stdin, or env:NAME")
			}
			oldKey, err := readKeyFrom(fromKey, cmd.InOrStdin())
			if err != nil {
				return err
			}
			dir, err := dataDir(data)
			if err != nil {
				return err
			}
			newKey, where, err := secret.Current(os.Getenv, dir)
			if err != nil {
				return fmt.Errorf("the new key: %w (set AGENTRUN_SEAL_KEY to it, or write it to the data folder's seal.key)", err)
			}
			if bytes.Equal(oldKey, newKey) {
				return fmt.Errorf("the old key (--from-key) is the new key (%s): set AGENTRUN_SEAL_KEY or seal.key to the new key first", where)
			}
			from, err := secret.New(oldKey)
			if err != nil {
				return err
			}
			to, err := secret.New(newKey)
			if err != nil {
				return err
			}
			pauseAfter := 0
			if v := os.Getenv(envDevResealPause); v != "" && !devHooks {
				fmt.Fprintf(os.Stderr, "%s is ignored: the test hooks are off (--dev-hooks or %s=1)\n", envDevResealPause, envDev)
			} else if v != "" {
				if pauseAfter, err = strconv.Atoi(v); err != nil || pauseAfter < 1 {
					return fmt.Errorf("%s=%q: a number of values, 1 or more", envDevResealPause, v)
				}
			}
			ctx := cmd.Context()
			if !strings.HasPrefix(os.Getenv("AGENTRUN_STORE_URL"), "postgres") {
				// Opening a SQLite path makes a new, empty store: a wrong --data would "reseal" nothing.
				if path, err := sqlitePath(dir); err == nil {
					if _, err := os.Stat(path); err != nil {
						return fmt.Errorf("no store to reseal at %s (%v): give the data folder with --data or AGENTRUN_HOME, or AGENTRUN_STORE_URL", path, errors.Unwrap(err))
					}
				}
			}
			st, desc, err := openStore(ctx, dir)
			if err != nil {
				return err
			}
			defer st.Close()
			r, ok := st.(store.Resealer)
			if !ok {
				return fmt.Errorf("the %s store cannot reseal", st.Backend())
			}
			fmt.Fprintf(os.Stderr, "resealing the secrets of %s under the key from %s\n", desc, where)
			n, err := r.ResealSecrets(ctx, secret.Reseal(from, to), func(done, total int) {
				if done == total || done%500 == 0 {
					fmt.Fprintf(os.Stderr, "  written %d of %d\n", done, total)
				}
				if done == pauseAfter {
					fmt.Fprintf(os.Stderr, "  paused after %d values (%s): waiting to be killed\n", done, envDevResealPause)
					<-ctx.Done()
				}
			})
			if err != nil {
				if errors.Is(err, secret.ErrWrongOldKey) || errors.Is(err, store.ErrInUse) {
					return fmt.Errorf("%w; nothing was changed", err)
				}
				return err
			}
			if n == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "%s holds no secrets: nothing to reseal (is it the store you meant?)\n", desc)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "resealed %d secrets under the key from %s: start every process with that key\n", n, where)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&fromKey, "from-key", "", "the old seal key: a file holding it, - for stdin, or env:NAME")
	f.StringVar(&data, "data", "", "data folder (default $AGENTRUN_HOME or ~/.agentrun): its seal.key and SQLite store")
	devHooksFlag(f, &devHooks)
	return cmd
}

// addToSecrets puts reseal under the CLI's `secrets` command (which talks to a server; reseal
// works on the store itself, so it lives here with the store's other offline commands).
func addToSecrets(root *cobra.Command) {
	for _, c := range root.Commands() {
		if c.Name() == "secrets" {
			c.AddCommand(newResealCmd())
			return
		}
	}
	panic("no secrets command to put reseal under")
}
