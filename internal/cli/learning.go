package cli

import (
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func learningCmd() *cobra.Command {
	cmd := groupCmd("learning", "A learning agent's folder: list, show, log, retire, restore, export")
	cmd.Long = `A learning agent (spec.learning: true) keeps what its runs learned in a git repository with one
branch, main, in the store: notes/ (one fact each: front matter name, description, type, then the
fact), skills/ (SKILL.md folders) and workflows/. Every change is a commit; retiring is a commit;
an ETag is the file's blob hash.`
	cmd.AddCommand(learningListCmd(), learningShowCmd(), learningLogCmd(), learningRetireCmd(), learningRestoreCmd(), learningExportCmd())
	return cmd
}

func learningListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "list AGENT",
		Short:   "List the notes, skills' files and workflows on main, with their ETags",
		Example: `  agentrun learning list support`,
		Args:    exactArgs(1, "the agent"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			l, err := c.Learning(ctxOf(cmd), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), l)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KIND\tPATH\tETAG\tDESCRIPTION")
			for _, it := range l.Items {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", it.Kind, it.Path, it.ETag, it.Description)
			}
			return tw.Flush()
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON")
	return cmd
}

func learningShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "show AGENT NOTE",
		Short:   "Print a note (its name, or any file's path) as main has it",
		Example: `  agentrun learning show support deploy`,
		Args:    exactArgs(2, "the agent and the note"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			f, err := c.LearnedFile(ctxOf(cmd), args[0], args[1])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%s (etag %s)\n", f.Path, f.ETag)
			fmt.Fprint(cmd.OutOrStdout(), f.Content)
			return nil
		}),
	}
}

func learningLogCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "log AGENT",
		Short:   "The learning folder's commits, newest first",
		Example: `  agentrun learning log support`,
		Args:    exactArgs(1, "the agent"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			log, err := c.LearningLog(ctxOf(cmd), args[0])
			if err != nil {
				return err
			}
			for _, e := range log {
				subject, _, _ := strings.Cut(e.Message, "\n")
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s %s %s\n", e.Hash, e.When.Format("2006-01-02T15:04:05Z"), e.Author, subject)
			}
			return nil
		}),
	}
}

func learningRetireCmd() *cobra.Command {
	var etag string
	cmd := &cobra.Command{
		Use:     "retire AGENT NOTE --etag E",
		Short:   "Retire a note (a commit that removes it), if its ETag is still E",
		Example: `  agentrun learning retire support deploy --etag $(agentrun learning list support --json | jq -r '.items[0].etag')`,
		Args:    exactArgs(2, "the agent and the note"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if etag == "" {
				return usageError("retire needs --etag, the note's ETag as agentrun learning list shows it")
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			ch, err := c.RetireLearned(ctxOf(cmd), args[0], args[1], etag)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "retired %s in commit %s\n", ch.Path, ch.Commit)
			return nil
		}),
	}
	cmd.Flags().StringVar(&etag, "etag", "", "the note's current ETag")
	return cmd
}

func learningRestoreCmd() *cobra.Command {
	var from string
	cmd := &cobra.Command{
		Use:     "restore AGENT NOTE --from COMMIT",
		Short:   "Bring a note back as it was in COMMIT (a new commit)",
		Example: `  agentrun learning restore support deploy --from 3f2a91c0d7e4`,
		Args:    exactArgs(2, "the agent and the note"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if from == "" {
				return usageError("restore needs --from, a commit of agentrun learning log")
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			ch, err := c.RestoreLearned(ctxOf(cmd), args[0], args[1], from)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "restored %s in commit %s\n", ch.Path, ch.Commit)
			return nil
		}),
	}
	cmd.Flags().StringVar(&from, "from", "", "the commit that holds the note as it should be: its hash, or 7 or more of its first digits")
	return cmd
}

func learningExportCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "export AGENT > agent-learning.bundle",
		Short:   "Write main as a git bundle on stdout (git clone agent-learning.bundle)",
		Example: `  agentrun learning export support > support-learning.bundle && git clone support-learning.bundle`,
		Args:    exactArgs(1, "the agent"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if f, ok := cmd.OutOrStdout().(*os.File); ok {
				if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
					return usageError("the bundle is binary: send stdout to a file (agentrun learning export %s > %s-learning.bundle)", args[0], args[0])
				}
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			return c.ExportLearning(ctxOf(cmd), args[0], cmd.OutOrStdout())
		}),
	}
}
