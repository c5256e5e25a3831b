package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

func agentsMCPToolsCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "mcp-tools AGENT SERVER",
		Short: "List the tools of one of an agent's MCP servers, and which are ticked",
		Long: `Ask one of the MCP servers an agent names (spec.mcpServers[].name) for its tools: the server
starts a stdio server (in a scratch folder) or reaches an HTTP one, with the secrets its env and
headers name. TICKED says which the agent's runs are offered (as mcp__SERVER__TOOL): nothing is
offered until its name is in the server's tools list. SAFE says how a call is journaled: a tool
the server marks readOnlyHint or idempotentHint is repeated after a crash, any other parks the run
for a person to resolve. A ticked name the server no longer has is listed as missing.`,
		Example: `  agentrun agents mcp-tools notes everything
  agentrun agents mcp-tools notes everything -o json`,
		Args: exactArgs(2, "the agent's name and the MCP server's name"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "", "json", "yaml"); err != nil {
				return err
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			l, err := c.MCPTools(ctxOf(cmd), args[0], args[1])
			if err != nil {
				return err
			}
			if output != "" {
				return writeValue(cmd.OutOrStdout(), l, output)
			}
			rows := make([][]string, 0, len(l.Tools))
			for _, t := range l.Tools {
				ticked, safe := "no", "no"
				if t.Ticked {
					ticked = "yes"
				}
				switch {
				case t.ReadOnly:
					safe = "read-only"
				case t.Idempotent:
					safe = "idempotent"
				}
				rows = append(rows, []string{t.Name, ticked, safe, truncate(t.Description, 80)})
			}
			if err := writeTable(cmd.OutOrStdout(), []string{"TOOL", "TICKED", "SAFE", "DESCRIPTION"}, rows); err != nil {
				return err
			}
			if len(l.Missing) > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "ticked but not on the server (not offered): %s\n", strings.Join(l.Missing, ", "))
			}
			return nil
		}),
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: table (default), json or yaml")
	return cmd
}
