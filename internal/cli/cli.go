// Package cli holds agentrun's CLI verbs (every command of the binary but serve and dev), built
// with cobra on the public client package. It speaks both seeds' dialects: the AgentRun seed's
// `agents create`, `runs start|wait|message|read-file|...`, and the Nodus seed's kubectl-style
// `apply -f`, `get`, `wait --for=jsonpath=...`, `patch`, `cancel`, `delete`, `create agentrun` and
// `agentrun answer|steps|send`. Commands returns them; AddGlobalFlags registers --server and
// --token on the root; Report turns a command's error into the process's exit code (0 ok, 1
// failure, 2 usage, 8 a run waits on a person).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"agentrun.dev/agentrun/client"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/template"
	"agentrun.dev/agentrun/internal/workflow"
)

// Exit codes.
const (
	ExitOK              = 0
	ExitFailure         = 1
	ExitUsage           = 2
	ExitWaitingOnPerson = 8
)

// ExitError makes the process exit with Code after printing Err ("error: " + Err) when Err is not
// nil. Every error the commands return is an *ExitError.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Version is what `agentrun version` prints; set it at build time with
// -ldflags "-X agentrun.dev/agentrun/internal/cli.Version=v1.2.3".
var Version = "dev"

// The global flags (see AddGlobalFlags).
var (
	flagServer string
	flagToken  string
)

// AddGlobalFlags registers the persistent flags every CLI verb reads on root: --server (the server
// URL; overrides AGENTRUN_URL and the data folder's server.json) and --token (overrides
// AGENTRUN_TOKEN and the data folder's token file). It also makes flag errors usage errors (exit 2).
// Call it once, on the root command, before Execute.
func AddGlobalFlags(root *cobra.Command) {
	root.PersistentFlags().StringVar(&flagServer, "server", "", "server URL (overrides AGENTRUN_URL and the data folder's server.json)")
	root.PersistentFlags().StringVar(&flagToken, "token", "", "API token (overrides AGENTRUN_TOKEN and the data folder's token file)")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &ExitError{Code: ExitUsage, Err: fmt.Errorf("%w\nSee '%s --help'.", err, c.CommandPath())}
	})
}

// Report prints err to stderr as "error: ..." (nothing for an *ExitError whose Err is nil) and
// returns the exit code: the *ExitError's code, 2 for cobra's own usage errors (unknown command or
// flag, missing argument), 1 for anything else, 0 for nil.
func Report(err error, stderr io.Writer) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintln(stderr, "error: "+ee.Err.Error())
		}
		return ee.Code
	}
	fmt.Fprintln(stderr, "error: "+err.Error())
	if isCobraUsageError(err) {
		return ExitUsage
	}
	return ExitFailure
}

func isCobraUsageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "flag needs an argument",
		"invalid argument", "required flag", "accepts ", "requires at least", "bad flag syntax", "if any flags in the group"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// Commands returns every top-level CLI command, for the root beside serve and dev.
func Commands() []*cobra.Command {
	return []*cobra.Command{
		agentsCmd(),
		runnersCmd(),
		loginCmd(),
		runsCmd(),
		creditsCmd(),
		secretsCmd(),
		nodusRunCmd(),
		applyCmd(),
		getCmd(),
		waitCmd(),
		deleteCmd(),
		cancelCmd(),
		patchCmd(),
		createCmd(),
		evalCmd(),
		envCmd(),
		triggersCmd(),
		webhooksCmd(),
		describeCmd(),
		skillsCmd(),
		learningCmd(),
		workflowsCmd(),
		templateCmd(),
		serverCmd(),
		versionCmd(),
	}
}

// usageError is a usage error (exit 2).
func usageError(format string, args ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// failure turns an error into an *ExitError with code 1; a server error prints as
// "<message> (code <Code>, field <field>)".
func failure(err error) error {
	if err == nil {
		return nil
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return err
	}
	return &ExitError{Code: ExitFailure, Err: errors.New(describe(err))}
}

// describe renders an error for the user: a server error as "<message> (code C, field F)".
func describe(err error) string {
	var te *template.Error
	if errors.As(err, &te) {
		return te.Error() // it names its file, which the api error alone does not
	}
	e, ok := api.AsError(err)
	if !ok {
		return err.Error()
	}
	if len(e.Errors) > 1 {
		// Every problem the check found, a line each, as `workflows validate` lists its errors.
		s := workflow.CountErrors(len(e.Errors)) + ":"
		for _, fe := range e.Errors {
			s += "\n  " + describeOne(fe.Message, fe.Code, fe.Field)
		}
		return s
	}
	s := describeOne(e.Message, e.Code, e.Field)
	switch {
	case e.Code == api.CodeUnauthorized && e.Field == "password":
		// A person's sign-in was refused: the token has nothing to do with it.
		s += "; the user or the password is wrong: check --user (default admin) and the password"
	case e.Code == api.CodeUnauthorized:
		s += "; pass --token or set AGENTRUN_TOKEN (a local server's token is in its data folder's token file)"
	}
	return s
}

// describeOne is one server error as "<message> (code C, field F)".
func describeOne(msg string, code api.Code, field string) string {
	s := msg + " (code " + string(code)
	if field != "" {
		s += ", field " + field
	}
	return s + ")"
}

// runE adapts a command body so that whatever it returns is an *ExitError.
func runE(f func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		return failure(f(cmd, args))
	}
}

// Argument validators that fail as usage errors.

func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError("%s takes %s (got %d arguments)\nUsage: %s", cmd.CommandPath(), what, len(args), cmd.UseLine())
		}
		return noEmptyArgs(cmd, args, what)
	}
}

// noEmptyArgs refuses an empty argument: usually an unset shell variable, which would otherwise
// make a request to the wrong URL.
func noEmptyArgs(cmd *cobra.Command, args []string, what string) error {
	for i, a := range args {
		if strings.TrimSpace(a) == "" {
			return usageError("%s: argument %d is empty (%s)\nUsage: %s", cmd.CommandPath(), i+1, what, cmd.UseLine())
		}
	}
	return nil
}

func rangeArgs(lo, hi int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < lo || len(args) > hi {
			return usageError("%s takes %s (got %d arguments)\nUsage: %s", cmd.CommandPath(), what, len(args), cmd.UseLine())
		}
		return noEmptyArgs(cmd, args, what)
	}
}

func minArgs(lo int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < lo {
			return usageError("%s takes %s\nUsage: %s", cmd.CommandPath(), what, cmd.UseLine())
		}
		return noEmptyArgs(cmd, args, what)
	}
}

// groupCmd is a command that only holds subcommands: alone it prints its help; with an unknown
// subcommand it is a usage error.
func groupCmd(use, short string, aliases ...string) *cobra.Command {
	return &cobra.Command{
		Use:     use,
		Short:   short,
		Aliases: aliases,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError("unknown command %q for %q\nRun '%s --help' for usage.", args[0], cmd.CommandPath(), cmd.CommandPath())
			}
			return cmd.Help()
		},
	}
}

// newClient finds the server (--server, AGENTRUN_URL, server.json) and its token.
func newClient() (*client.Client, error) {
	c, err := client.DiscoverWith(flagServer, flagToken)
	if err != nil {
		return nil, &ExitError{Code: ExitFailure, Err: err}
	}
	return c, nil
}

func ctxOf(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

func serverCmd() *cobra.Command {
	cmd := groupCmd("server", "Ask the server about itself")
	cmd.AddCommand(&cobra.Command{
		Use:   "capabilities",
		Short: "Print what the server can do (harnesses, computers, models) as JSON",
		Args:  exactArgs(0, "no arguments"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			raw, err := c.Capabilities(ctxOf(cmd))
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if _, err := out.Write(raw); err != nil {
				return err
			}
			if len(raw) == 0 || raw[len(raw)-1] != '\n' {
				_, err = io.WriteString(out, "\n")
			}
			return err
		}),
	})
	return cmd
}

func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the CLI's version",
		Args:  exactArgs(0, "no arguments"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionString())
			return err
		}),
	}
}

func versionString() string {
	v := Version
	rev := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = s.Value[:12]
			}
		}
	}
	s := "agentrun " + v
	if rev != "" {
		s += " (" + rev + ")"
	}
	return s + " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
}
