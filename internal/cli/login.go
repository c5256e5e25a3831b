package cli

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"agentrun.dev/agentrun/client"
)

// loginCmd is `agentrun login`: a person signs in with their password and the CLI keeps the session
// (in the data folder's session.json) so that commands only a person may run work, such as
// approving a tool call. The first sign-in sets the password with the setup code the server printed.
func loginCmd() *cobra.Command {
	var user, setupCode string
	var passwordStdin, logout bool
	cmd := &cobra.Command{
		Use:   "login",
		Short: "Sign in as a person (needed to approve tool calls); the first time sets the password",
		Args:  exactArgs(0, "no arguments"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if logout {
				if err := client.Logout(); err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), "signed out")
				return nil
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			in := bufio.NewReader(cmd.InOrStdin())
			if !passwordStdin {
				fmt.Fprintf(cmd.ErrOrStderr(), "Password for %s (input is shown; use --password-stdin in scripts): ", user)
			}
			pw, err := in.ReadString('\n')
			if err != nil && err != io.EOF {
				return fmt.Errorf("read password: %w", err)
			}
			pw = strings.TrimRight(pw, "\r\n")
			if pw == "" {
				return usageError("no password given")
			}
			session, err := c.Login(ctxOf(cmd), user, pw, setupCode)
			if err != nil {
				return failure(err)
			}
			if err := c.SaveSession(user, session); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "signed in as %s\n", user)
			return nil
		}),
	}
	f := cmd.Flags()
	f.StringVar(&user, "user", "admin", "who signs in")
	f.StringVar(&setupCode, "setup-code", "", "the one-time setup code the server printed (first sign-in only: it sets the password)")
	f.BoolVar(&passwordStdin, "password-stdin", false, "read the password from standard input without prompting")
	f.BoolVar(&logout, "logout", false, "forget the saved session")
	return cmd
}
