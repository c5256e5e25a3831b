package app

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"agentrun.dev/agentrun/internal/cli"
	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/computer/computertest"
	"agentrun.dev/agentrun/internal/computer/providers"
	"agentrun.dev/agentrun/internal/computer/remote"
	"agentrun.dev/agentrun/internal/store"
)

// newComputerCmd is `agentrun computer`: the computer providers of this
// machine, and their conformance suite run live (the same check functions
// `go test` runs, outside the test framework).
func newComputerCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "computer", Short: "Computer providers: which work here, and their conformance suite"}

	list := &cobra.Command{
		Use:   "providers",
		Short: "List the computer providers, their kinds, and whether each works on this machine (and why not)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%-10s %-10s %-10s %s\n", "PROVIDER", "KINDS", "AVAILABLE", "REASON")
			for _, s := range providers.Default(nil).Status(cmd.Context()) {
				kinds := make([]string, len(s.Kinds))
				for i, k := range s.Kinds {
					kinds[i] = string(k)
				}
				reason := s.Reason
				for _, k := range s.Kinds {
					if why, ok := s.KindsUnavailable[k]; ok {
						reason = strings.TrimPrefix(reason+"; ", "; ") + string(k) + " not available: " + why
					}
				}
				fmt.Fprintf(out, "%-10s %-10s %-10v %s\n", s.Name, strings.Join(kinds, ","), s.Available, reason)
			}
			return nil
		},
	}

	var provider, kind string
	conf := &cobra.Command{
		Use:   "conformance --provider P --kind K",
		Short: "Run the computer conformance suite against a live provider on this machine",
		Long: "Runs every conformance check of the kind against the provider, each with fresh computers " +
			"around scratch run folders in a temporary folder, and prints PASS, FAIL or SKIP per check. " +
			"Exits 1 if any check fails.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			reg := providers.Default(nil)
			p, ok := reg.Get(provider)
			if !ok {
				return &cli.ExitError{Code: cli.ExitUsage, Err: fmt.Errorf("unknown provider %q", provider)}
			}
			if computertest.Checks(computer.Kind(kind)) == nil {
				return &cli.ExitError{Code: cli.ExitUsage, Err: fmt.Errorf("no conformance checks for kind %q (sandbox, browser, desktop)", kind)}
			}
			tmp, err := os.MkdirTemp("", "agentrun-conformance-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(tmp)
			out := cmd.OutOrStdout()
			start := time.Now()
			var passed, skipped int
			failed, err := computertest.RunChecks(cmd.Context(), p, computer.Kind(kind), tmp, func(r computertest.Result) {
				var sk computertest.Skip
				switch {
				case r.Err == nil:
					passed++
					fmt.Fprintf(out, "PASS %-24s %6.2fs\n", r.Name, r.Duration.Seconds())
				case asSkip(r.Err, &sk):
					skipped++
					fmt.Fprintf(out, "SKIP %-24s %s\n", r.Name, sk.Reason)
				default:
					fmt.Fprintf(out, "FAIL %-24s %6.2fs\n     %s\n", r.Name, r.Duration.Seconds(),
						strings.ReplaceAll(r.Err.Error(), "\n", "\n     "))
				}
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "%s %s: %d passed, %d failed, %d skipped in %.1fs\n", provider, kind, passed, failed, skipped,
				time.Since(start).Seconds())
			if failed > 0 {
				return &cli.ExitError{Code: cli.ExitFailure}
			}
			return nil
		},
	}
	conf.Flags().StringVar(&provider, "provider", "", "provider name (local, chromium, docker)")
	conf.Flags().StringVar(&kind, "kind", "", "kind of computer (sandbox, browser, desktop)")
	conf.MarkFlagRequired("provider")
	conf.MarkFlagRequired("kind")
	cmd.AddCommand(list, conf)
	return cmd
}

func asSkip(err error, s *computertest.Skip) bool {
	sk, ok := err.(computertest.Skip)
	if ok {
		*s = sk
	}
	return ok
}

// secretKeys tells the remote computer vendors whether their keys are set: the key names of a
// sealed secret in st, never its values.
func secretKeys(st store.Store) remote.Secrets {
	return func(ctx context.Context, name string) ([]string, bool, error) {
		list, err := st.ListSecrets(ctx)
		if err != nil {
			return nil, false, err
		}
		for _, s := range list {
			if s.Name == name {
				return s.Keys, true, nil
			}
		}
		return nil, false, nil
	}
}
