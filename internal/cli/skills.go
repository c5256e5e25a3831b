package cli

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"agentrun.dev/agentrun/client"
	"agentrun.dev/agentrun/internal/api"
)

func skillsCmd() *cobra.Command {
	cmd := groupCmd("skills", "Add, list and show skills (folders with a SKILL.md)", "skill")
	cmd.AddCommand(skillsAddCmd(), skillsListCmd(), skillsShowCmd(), skillInstallCmd())
	return cmd
}

func skillsAddCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "add DIR",
		Short: "Store a skill folder as the skill's next version",
		Long: `Store a skill: a folder with a SKILL.md, whose YAML front matter gives its name and description,
then markdown that says how to do the task; other files beside it (references, scripts, templates)
are stored with it, at most 1 MiB in all. Each add of other content is the skill's next version
(1, 2, ...); the same content again is the version that has it. An agent names skills in
spec.skills as NAME (pinned to the latest version when the agent is applied) or NAME@VERSION.`,
		Example: `  agentrun skills add ./release-notes`,
		Args:    exactArgs(1, "the skill's folder"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			sk, left, err := readSkillDir(args[0])
			if err != nil {
				return err
			}
			for _, l := range left {
				fmt.Fprintf(cmd.ErrOrStderr(), "left out %s: a symbolic link (a skill stores the folder's regular files only)\n", l)
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			out, res, err := c.AddSkill(ctxOf(cmd), sk)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "skill/%s %s\n", out.Ref(), res)
			return nil
		}),
	}
}

// readSkillDir reads a skill folder's regular files (.git is left out, and so are symbolic links,
// named in left so the user is told). It stops past the 1 MiB limit, refused as the server would
// refuse it.
func readSkillDir(dir string) (sk *api.Skill, left []string, err error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("skill folder: %w", err)
	}
	if !st.IsDir() {
		return nil, nil, usageError("%s is not a folder: give the skill's folder, the one holding SKILL.md", dir)
	}
	sk = &api.Skill{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "Skill"}}
	total := 0
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			left = append(left, filepath.ToSlash(rel))
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		total += len(b)
		if total > api.MaxSkillBytes {
			return api.E(api.CodeTooLarge, "spec.files", "the skill's files hold more than %d bytes (1 MiB), the most a skill holds in all (at %s)", api.MaxSkillBytes, filepath.ToSlash(rel))
		}
		sk.Spec.Files = append(sk.Spec.Files, api.NewSkillFile(filepath.ToSlash(rel), b))
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read skill folder %s: %w", dir, err)
	}
	return sk, left, nil
}

func skillsListCmd() *cobra.Command {
	return listVerb[api.Skill]{use: "list", short: "List every version of every stored skill",
		fetch:  (*client.Client).ListSkills,
		header: []string{"NAME", "VERSION", "FILES", "DESCRIPTION"},
		rows: rowEach(func(s api.Skill) []string {
			return []string{s.Metadata.Name, strconv.Itoa(s.Spec.Version), strconv.Itoa(len(s.Spec.Files)), api.FirstLine(s.Spec.Description, 80)}
		}),
		value: func(l []api.Skill) any { return l }}.cmd()
}

func skillsShowCmd() *cobra.Command {
	var output, file string
	cmd := &cobra.Command{
		Use:   "show NAME[@VERSION]",
		Short: "Show a skill's SKILL.md (or --file) and its files; NAME alone is the latest version",
		Args:  exactArgs(1, "the skill, NAME or NAME@VERSION"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "", "json", "yaml"); err != nil {
				return err
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			s, err := c.GetSkill(ctxOf(cmd), args[0])
			if err != nil {
				return err
			}
			if output != "" {
				return writeValue(cmd.OutOrStdout(), s, output)
			}
			w := cmd.OutOrStdout()
			if file != "" {
				b, ok := s.File(file)
				if !ok {
					return fmt.Errorf("skill %s has no file %q", s.Ref(), file)
				}
				_, err := w.Write(b)
				return err
			}
			var paths []string
			for _, f := range s.Spec.Files {
				b, _ := f.Bytes()
				paths = append(paths, f.Path+" ("+strconv.Itoa(len(b))+" bytes)")
			}
			fmt.Fprintf(w, "skill/%s  %s\nfiles: %s\n\n", s.Ref(), s.Spec.Digest, strings.Join(paths, ", "))
			md, _ := s.File(api.SkillFileName)
			_, err = w.Write(md)
			return err
		}),
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output: json or yaml (default: SKILL.md as text)")
	cmd.Flags().StringVar(&file, "file", "", "print this file of the skill instead")
	return cmd
}
