package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"agentrun.dev/agentrun/internal/selfskill"
)

// skillInstallCmd is `agentrun skill install --claude|--codex`: the skill teaching a coding agent
// this CLI (internal/selfskill), written where that agent reads a user's skills.
func skillInstallCmd() *cobra.Command {
	var claude, codex bool
	cmd := &cobra.Command{
		Use:   "install --claude|--codex",
		Short: "Write the skill that teaches a coding agent (Claude Code, Codex) this CLI",
		Long: `Write the agentrun skill (SKILL.md: starting a server, templates, runs, approvals, evaluation)
where a coding agent finds a user's skills: Claude Code's ~/.claude/skills/agentrun/SKILL.md,
Codex's $CODEX_HOME/skills/agentrun/SKILL.md (default ~/.codex/skills). A server serves the same
text at /SKILL.md.`,
		Example: `  agentrun skill install --claude
  agentrun skill install --codex`,
		Args: exactArgs(0, "no arguments"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			var agents []string
			if claude {
				agents = append(agents, "claude")
			}
			if codex {
				agents = append(agents, "codex")
			}
			if len(agents) == 0 {
				return usageError("name the coding agent: --claude or --codex (or both)")
			}
			for _, a := range agents {
				p, err := selfskill.Install(a)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\n", p)
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&claude, "claude", false, "for Claude Code (~/.claude/skills)")
	cmd.Flags().BoolVar(&codex, "codex", false, "for Codex ($CODEX_HOME/skills, default ~/.codex/skills)")
	return cmd
}
