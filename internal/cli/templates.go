package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/template"
)

// Template commands: agentrun template list | show NAME | apply NAME|DIR | eval DIR|NAME. The
// format and the embedded templates are internal/template's; apply is one request,
// POST /v2/templates/apply, which makes everything or nothing.

func templateCmd() *cobra.Command {
	cmd := groupCmd("template", "Templates: ready-made agents (and your own folders) applied in one step", "templates")
	list := templateListCmd()
	cmd.RunE, cmd.Args = list.RunE, list.Args
	cmd.AddCommand(list, templateShowCmd(), templateApplyCmd(), templateEvalCmd())
	return cmd
}

func templateListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the templates this binary ships",
		Args:  exactArgs(0, "no arguments"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			rows, err := template.Describe()
			if err != nil {
				return err
			}
			var out [][]string
			for _, r := range rows {
				out = append(out, []string{r[0], r[1]})
			}
			return writeTable(cmd.OutOrStdout(), []string{"NAME", "DESCRIPTION"}, out)
		}),
	}
}

func loadTemplate(arg, name string, set []string) (*template.Template, error) {
	fsys, _, err := template.Open(arg)
	if err != nil {
		return nil, usageError("%v", err)
	}
	vals := map[string]string{}
	for _, kv := range set {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageError("--set %q: write key=value", kv)
		}
		vals[k] = v
	}
	return template.Load(fsys, template.Options{Name: name, Set: vals})
}

func templateShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "show NAME|DIR",
		Short:   "Show a template: its README, files, agent, triggers, eval cases and what it needs from you",
		Example: "  agentrun template show inbound-lead",
		Args:    exactArgs(1, "a template's name or folder"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			t, err := loadTemplate(args[0], "", nil)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintln(w, strings.TrimRight(t.Readme, "\n"))
			fmt.Fprintf(w, "\nFiles: %s\n", strings.Join(t.Files, ", "))
			a := t.Apply.Agent.Spec
			kind := "server's choice"
			if a.Computer != nil {
				kind = string(a.Computer.Kind)
			}
			fmt.Fprintf(w, "Agent %s: harness %s, computer %s, tools %s, skills %s, learning %v, cap $%s per run\n",
				t.Apply.Agent.Metadata.Name, a.Harness, kind, orNone(a.Tools), orNone(a.Skills), a.Learning, a.PerRunMaxCostUSD)
			for _, tr := range t.Apply.Triggers {
				fmt.Fprintf(w, "Trigger %s (%s)\n", tr.Metadata.Name, tr.Spec.Kind())
			}
			for _, c := range t.Cases {
				fmt.Fprintf(w, "Eval case %s (grader %s)\n", c.Name, c.Grader.Kind)
			}
			if len(t.Manifest.Params) > 0 {
				var keys []string
				for k := range t.Manifest.Params {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for _, k := range keys {
					p := t.Manifest.Params[k]
					fmt.Fprintf(w, "--set %s=... %s (default %q)\n", k, p.Description, p.Default)
				}
			}
			writeNeeds(w, t, nil)
			return nil
		}),
	}
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ",")
}

func templateApplyCmd() *cobra.Command {
	var name string
	var set []string
	cmd := &cobra.Command{
		Use:   "apply NAME|DIR [--name AGENT] [--set key=value]...",
		Short: "Make a template's agent, its skills and its triggers in one all-or-nothing step",
		Long: `Apply a template: one of those 'agentrun template list' shows, or a folder in the same format
(docs/templates.md). Every file is checked first, with the same checks as apply, each error naming
its file and field; then the server makes the agent, its skills and its triggers in one step, or
nothing. A webhook or GitHub trigger whose signing secret does not exist yet is made suspended. MCP
tools are granted nothing until you tick them. What the template needs from you is listed at the
end, with the command for each.`,
		Example: `  agentrun template apply inbound-lead
  agentrun template apply code-review --name review-app --set repository=me/app
  agentrun template apply ./my-template`,
		Args: exactArgs(1, "a template's name or folder"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			t, err := loadTemplate(args[0], name, set)
			if err != nil {
				return err
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			out, err := c.ApplyTemplate(ctxOf(cmd), &t.Apply)
			if err != nil {
				if ae, ok := api.AsError(err); ok {
					file, field := t.FileOf(ae.Field)
					cp := *ae
					cp.Field = field
					return &template.Error{File: file, Err: &cp}
				}
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "agent/%s created (template %s)\n", out.Agent.Metadata.Name, t.Manifest.Name)
			for _, s := range out.Skills {
				fmt.Fprintf(w, "skill/%s stored\n", s)
			}
			for _, tr := range out.Triggers {
				switch {
				case tr.SuspendedFor != "":
					fmt.Fprintf(w, "trigger/%s created, suspended until its signing secret %s exists\n", tr.Name, tr.SuspendedFor)
				case tr.Suspended:
					fmt.Fprintf(w, "trigger/%s created, suspended\n", tr.Name)
				default:
					fmt.Fprintf(w, "trigger/%s created\n", tr.Name)
				}
				if tr.WebhookURL != "" {
					fmt.Fprintf(w, "  its URL: %s\n", tr.WebhookURL)
				}
			}
			writeNeeds(w, t, out)
			fmt.Fprintf(w, "\nStart a run: agentrun runs start %s --input '...' --wait\n", out.Agent.Metadata.Name)
			return nil
		}),
	}
	cmd.Flags().StringVar(&name, "name", "", "the agent's name (default: the template's); triggers are named AGENT-FILE")
	cmd.Flags().StringArrayVar(&set, "set", nil, "a template parameter, key=value (template show lists them)")
	return cmd
}

func writeNeeds(w io.Writer, t *template.Template, out *api.TemplateApplied) {
	needs := t.Needs(out)
	if out == nil {
		// Before apply: every signing secret is needed unless it exists.
		for _, tr := range t.Apply.Triggers {
			if ref := tr.Spec.SigningSecret(); ref != "" {
				needs = append(needs, template.Need{What: fmt.Sprintf("trigger %s verifies deliveries with the signing secret %s (made suspended until it exists)", tr.Metadata.Name, ref),
					Command: fmt.Sprintf("agentrun triggers rotate %s && agentrun triggers resume %s", tr.Metadata.Name, tr.Metadata.Name)})
			}
		}
	}
	if len(needs) == 0 {
		return
	}
	fmt.Fprintln(w, "\nWhat it needs from you:")
	for i, n := range needs {
		fmt.Fprintf(w, "%d. %s\n", i+1, n.What)
		if n.Command != "" {
			fmt.Fprintf(w, "   %s\n", n.Command)
		}
	}
}
