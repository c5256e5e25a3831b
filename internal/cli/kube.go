package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"agentrun.dev/agentrun/client"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/workflow"
)

// resType is a resource type as the CLI names it.
type resType struct {
	plural, singular, kind string
}

var (
	typeAgents      = resType{"agents", "agent", "Agent"}
	typeAgentRuns   = resType{"agentruns", "agentrun", "AgentRun"}
	typeAgentGroups = resType{"agentgroups", "agentgroup", "AgentGroup"}
	typeTriggers    = resType{"triggers", "trigger", "Trigger"}
	typeWebhooks    = resType{"webhooks", "webhook", "Webhook"}
	allTypes        = []resType{typeAgents, typeAgentRuns, typeAgentGroups,
		{"environments", "environment", "Environment"}, typeTriggers, typeWebhooks, {"secrets", "secret", "Secret"}}
	typeAliases = map[string]string{"ar": "agentruns", "run": "agentruns", "runs": "agentruns", "ag": "agentgroups", "env": "environments", "envs": "environments"}
)

// lookupType finds a type by its plural, singular or short name (agent, agents, agentrun, ar, ag,
// ...), case-insensitively, with an optional API group suffix (agentrun.agentrun.dev).
func lookupType(s string) (resType, error) {
	n := strings.ToLower(s)
	for _, g := range []string{".agentrun.dev", ".nodus.dev"} {
		n = strings.TrimSuffix(n, g)
	}
	if a, ok := typeAliases[n]; ok {
		n = a
	}
	for _, t := range allTypes {
		if n == t.plural || n == t.singular || n == strings.ToLower(t.kind) {
			return t, nil
		}
	}
	return resType{}, usageError("unknown resource type %q: use agent, agentrun (ar) or agentgroup (ag)", s)
}

// kindType finds the type of a document's kind.
func kindType(kind string) (resType, bool) {
	for _, t := range allTypes {
		if t.kind == kind {
			return t, true
		}
	}
	return resType{}, false
}

// parseRefs reads "TYPE/NAME [TYPE/NAME...]" or "TYPE [NAME...]".
func parseRefs(args []string) (resType, []string, error) {
	if len(args) == 0 {
		return resType{}, nil, usageError("name a resource type: agent, agentrun (ar) or agentgroup (ag), as TYPE/NAME or TYPE NAME")
	}
	if !strings.Contains(args[0], "/") {
		t, err := lookupType(args[0])
		if err != nil {
			return resType{}, nil, err
		}
		for _, n := range args[1:] {
			if strings.Contains(n, "/") {
				return resType{}, nil, usageError("%q: give either TYPE NAME... or TYPE/NAME..., not both", n)
			}
		}
		if len(args) == 1 {
			return t, nil, nil
		}
		return t, args[1:], nil
	}
	var typ resType
	var names []string
	for i, a := range args {
		ts, name, ok := strings.Cut(a, "/")
		if !ok || name == "" || ts == "" {
			return resType{}, nil, usageError("%q: expected TYPE/NAME", a)
		}
		t, err := lookupType(ts)
		if err != nil {
			return resType{}, nil, err
		}
		if i > 0 && t != typ {
			return resType{}, nil, usageError("%q: all resources must be of one type (%s)", a, typ.singular)
		}
		typ = t
		names = append(names, name)
	}
	return typ, names, nil
}

// getResources prints resources (all of the type when names is empty) in the given output format;
// "" is a table.
func getResources(cmd *cobra.Command, typ resType, names []string, output, selector string) error {
	return getResourcesQuery(cmd, typ, names, output, selector, nil)
}

func getResourcesQuery(cmd *cobra.Command, typ resType, names []string, output, selector string, extra map[string]string) error {
	if err := checkOutput(output, "", "table", "wide", "json", "yaml", "name"); err != nil {
		return err
	}
	c, err := newClient()
	if err != nil {
		return err
	}
	ctx, out := ctxOf(cmd), cmd.OutOrStdout()
	var items []json.RawMessage
	var firstErr error
	if len(names) == 0 {
		q := url.Values{}
		if selector != "" {
			q.Set("fieldSelector", selector)
		}
		for k, v := range extra {
			if v != "" {
				q.Set(k, v)
			}
		}
		raw, err := c.ListObjects(ctx, typ.plural, q)
		if err != nil {
			return err
		}
		if output == "json" || output == "yaml" {
			return writeRaw(out, raw, output)
		}
		var l struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(raw, &l); err != nil {
			return fmt.Errorf("decode the list of %s: %w", typ.plural, err)
		}
		items = l.Items
		if len(items) == 0 && output != "name" {
			fmt.Fprintln(cmd.ErrOrStderr(), "No resources found.")
			return nil
		}
	} else {
		if selector != "" {
			return usageError("--field-selector applies to lists; leave out the names")
		}
		for _, n := range names {
			raw, err := c.GetObject(ctx, typ.plural, n)
			if err != nil {
				if len(names) == 1 {
					return err
				}
				fmt.Fprintln(cmd.ErrOrStderr(), "error: "+describe(err))
				if firstErr == nil {
					firstErr = &ExitError{Code: ExitFailure}
				}
				continue
			}
			items = append(items, raw)
		}
		if output == "json" || output == "yaml" {
			if len(names) == 1 && len(items) == 1 {
				return writeRaw(out, items[0], output)
			}
			if items == nil {
				items = []json.RawMessage{}
			}
			if err := writeValue(out, map[string]any{"apiVersion": api.APIVersion, "kind": typ.kind + "List", "items": items}, output); err != nil {
				return err
			}
			return firstErr
		}
	}
	if err := writeItems(out, typ, items, output, time.Now()); err != nil {
		return err
	}
	return firstErr
}

// writeItems prints objects as "name" lines or a table.
func writeItems(out io.Writer, typ resType, items []json.RawMessage, output string, now time.Time) error {
	if output == "name" {
		for _, raw := range items {
			var o struct {
				Metadata api.ObjectMeta `json:"metadata"`
			}
			if err := json.Unmarshal(raw, &o); err != nil {
				return err
			}
			if _, err := fmt.Fprintf(out, "%s/%s\n", typ.singular, o.Metadata.Name); err != nil {
				return err
			}
		}
		return nil
	}
	wide := output == "wide"
	var header []string
	var rows [][]string
	switch typ {
	case typeAgents:
		list := make([]api.Agent, len(items))
		for i, raw := range items {
			if err := json.Unmarshal(raw, &list[i]); err != nil {
				return fmt.Errorf("decode agent: %w", err)
			}
		}
		header, rows = agentRows(list, wide, now)
	case typeAgentRuns:
		list := make([]api.AgentRun, len(items))
		for i, raw := range items {
			if err := json.Unmarshal(raw, &list[i]); err != nil {
				return fmt.Errorf("decode agentrun: %w", err)
			}
		}
		header, rows = runRows(list, wide, now)
	case typeTriggers:
		// The same columns as `agentrun triggers`: a trigger's name and age alone say nothing.
		header = triggerHeader
		for _, raw := range items {
			var t api.Trigger
			if err := json.Unmarshal(raw, &t); err != nil {
				return fmt.Errorf("decode trigger: %w", err)
			}
			rows = append(rows, triggerRow(t))
		}
	case typeWebhooks:
		header = webhookHeader
		for _, raw := range items {
			var w api.Webhook
			if err := json.Unmarshal(raw, &w); err != nil {
				return fmt.Errorf("decode webhook: %w", err)
			}
			rows = append(rows, webhookRow(w))
		}
	default:
		list := make([]map[string]any, len(items))
		for i, raw := range items {
			v, err := decodeDoc(raw)
			if err != nil {
				return err
			}
			list[i], _ = v.(map[string]any)
		}
		header, rows = genericRows(list, typ == typeAgentGroups, now)
	}
	return writeTable(out, header, rows)
}

func getCmd() *cobra.Command {
	var output, selector string
	cmd := &cobra.Command{
		Use:   "get TYPE[/NAME] [NAME...] [-o yaml|json|wide|name] [--field-selector k=v]",
		Short: "Show resources (agent, agentrun/ar, agentgroup/ag) as a table, YAML or JSON",
		Example: `  agentrun get agentrun/hello-agent-run -o yaml
  agentrun get ar --field-selector spec.group=parallel-agents
  agentrun get agents`,
		Args: minArgs(1, "a resource type, and optionally names"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			typ, names, err := parseRefs(args)
			if err != nil {
				return err
			}
			return getResources(cmd, typ, names, output, selector)
		}),
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: table (default), wide, json, yaml or name")
	cmd.Flags().StringVar(&selector, "field-selector", "", "filter a list by fields, for example spec.group=parallel-agents")
	return cmd
}

func deleteCmd() *cobra.Command {
	var ignoreNotFound bool
	cmd := &cobra.Command{
		Use:   "delete TYPE/NAME... | TYPE NAME...",
		Short: "Delete resources (a group is deleted with all its runs)",
		Args:  minArgs(1, "TYPE/NAME or TYPE NAME"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			typ, names, err := parseRefs(args)
			if err != nil {
				return err
			}
			if len(names) == 0 {
				return usageError("name what to delete: %s/NAME", typ.singular)
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			var result error
			for _, n := range names {
				err := c.DeleteObject(ctxOf(cmd), typ.plural, n)
				if e, ok := api.AsError(err); ok && ignoreNotFound && e.Status == 404 {
					continue
				}
				if err != nil {
					if len(names) == 1 {
						return err
					}
					fmt.Fprintln(cmd.ErrOrStderr(), "error: "+describe(err))
					result = &ExitError{Code: ExitFailure}
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s/%s deleted\n", typ.singular, n)
			}
			return result
		}),
	}
	cmd.Flags().BoolVar(&ignoreNotFound, "ignore-not-found", false, "succeed when the resource does not exist")
	return cmd
}

// cancelResources cancels runs or groups and says so.
func cancelResources(cmd *cobra.Command, typ resType, names []string) error {
	if len(names) == 0 {
		return usageError("name what to cancel: %s/NAME", typ.singular)
	}
	c, err := newClient()
	if err != nil {
		return err
	}
	var result error
	for _, n := range names {
		raw, err := c.CancelObject(ctxOf(cmd), typ.plural, n)
		if err != nil {
			if len(names) == 1 {
				return err
			}
			fmt.Fprintln(cmd.ErrOrStderr(), "error: "+describe(err))
			result = &ExitError{Code: ExitFailure}
			continue
		}
		var phase api.Phase
		if v, err := decodeDoc(raw); err == nil {
			phase = api.Phase(str(lookup(v, "status", "phase")))
		}
		what := "cancelled"
		switch {
		case phase == "" || phase == api.PhaseCancelled:
		case phase == api.PhaseSucceeded || phase == api.PhaseFailed:
			what = "already finished (" + string(phase) + ")"
		default:
			what = "cancelling (now " + string(phase) + ")"
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s/%s %s\n", typ.singular, n, what)
	}
	return result
}

func cancelCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "cancel TYPE/NAME... | TYPE NAME...",
		Short: "Cancel runs or groups (a group cancels every run that has not finished)",
		Args:  minArgs(1, "TYPE/NAME or TYPE NAME"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			typ, names, err := parseRefs(args)
			if err != nil {
				return err
			}
			return cancelResources(cmd, typ, names)
		}),
	}
}

func patchCmd() *cobra.Command {
	var patch, patchType, output string
	cmd := &cobra.Command{
		Use:     "patch TYPE/NAME --patch JSON",
		Short:   "Change a resource with a JSON merge patch",
		Example: `  agentrun patch ag/parallel-agents --patch '{"spec":{"limits":{"maxActive":4}}}'`,
		Args:    rangeArgs(1, 2, "TYPE/NAME or TYPE NAME"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			typ, names, err := parseRefs(args)
			if err != nil {
				return err
			}
			if len(names) != 1 {
				return usageError("patch one resource: TYPE/NAME")
			}
			if patchType != "merge" {
				return usageError("--type %q is not supported: only merge (JSON merge patch)", patchType)
			}
			if err := checkOutput(output, "", "json", "yaml", "name"); err != nil {
				return err
			}
			if patch == "" {
				return usageError("give the patch with --patch JSON (or @FILE)")
			}
			data, err := jsonBody("--patch", patch, cmd.InOrStdin(), true)
			if err != nil {
				return err
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			raw, err := c.PatchObject(ctxOf(cmd), typ.plural, names[0], data)
			if err != nil {
				return err
			}
			if output == "json" || output == "yaml" {
				return writeRaw(cmd.OutOrStdout(), raw, output)
			}
			if output == "name" {
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s/%s\n", typ.singular, names[0])
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s/%s patched\n", typ.singular, names[0])
			return err
		}),
	}
	cmd.Flags().StringVarP(&patch, "patch", "p", "", "the JSON merge patch, or @FILE")
	cmd.Flags().StringVar(&patchType, "type", "merge", "the patch type (only merge)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "print the result: json, yaml or name")
	return cmd
}

// Apply.

// applyDoc is one document of an apply: where it starts, and its JSON (or why it has none).
type applyDoc struct {
	where string // FILE:LINE
	json  []byte
	err   error
}

// loadDocs reads every document of the files ("-" is stdin; a folder means its .yaml, .yml and
// .json files).
func loadDocs(files []string, stdin io.Reader) ([]applyDoc, error) {
	var docs []applyDoc
	for _, f := range files {
		var paths []string
		if f != "-" {
			st, err := os.Stat(f)
			if err != nil {
				return nil, usageError("%v", err)
			}
			if st.IsDir() {
				ents, err := os.ReadDir(f)
				if err != nil {
					return nil, err
				}
				for _, e := range ents {
					switch strings.ToLower(filepath.Ext(e.Name())) {
					case ".yaml", ".yml", ".json":
						if !e.IsDir() {
							paths = append(paths, filepath.Join(f, e.Name()))
						}
					}
				}
				sort.Strings(paths)
			} else {
				paths = []string{f}
			}
		} else {
			paths = []string{"-"}
		}
		for _, p := range paths {
			var data []byte
			var err error
			name := p
			if p == "-" {
				name = "stdin"
				data, err = io.ReadAll(stdin)
			} else {
				data, err = os.ReadFile(p)
			}
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", name, err)
			}
			docs = append(docs, splitDocs(name, data)...)
		}
	}
	return docs, nil
}

// splitDocs splits a file into its documents, converting each to JSON.
func splitDocs(name string, data []byte) []applyDoc {
	var docs []applyDoc
	parts, lines := api.SplitYAML(data)
	for i, part := range parts {
		d := applyDoc{where: fmt.Sprintf("%s:%d", name, lines[i])}
		d.json, d.err = api.YAMLToJSON(part)
		if d.err == nil && !strings.HasPrefix(strings.TrimSpace(string(d.json)), "{") {
			d.err = fmt.Errorf("the document is not an object")
		}
		docs = append(docs, d)
	}
	return docs
}

// applyTarget is what to do with one object.
type applyTarget struct {
	typ  resType
	name string // empty: create, and let the server name it
	body []byte
	desc string // `AgentRun "x"`, for errors
}

// planApply decides where one document goes: its kind picks the type, metadata.name the name. An
// AgentRun of a group may leave its name out: it is GROUP-TASKKEY. Lists (kind ...List with items)
// expand to their items.
func planApply(doc []byte) ([]applyTarget, error) {
	v, err := decodeDoc(doc)
	if err != nil {
		return nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the document is not an object")
	}
	kind := str(obj["kind"])
	if items, ok := obj["items"].([]any); ok && strings.HasSuffix(kind, "List") {
		var out []applyTarget
		for i, it := range items {
			b, err := json.Marshal(it)
			if err != nil {
				return nil, err
			}
			ts, err := planApply(b)
			if err != nil {
				return nil, fmt.Errorf("items[%d]: %w", i, err)
			}
			out = append(out, ts...)
		}
		return out, nil
	}
	if kind == "" {
		return nil, fmt.Errorf("the document has no kind (Agent, AgentRun or AgentGroup)")
	}
	typ, ok := kindType(kind)
	if !ok {
		return nil, fmt.Errorf("unknown kind %q (want Agent, AgentRun or AgentGroup)", kind)
	}
	name := str(lookup(obj, "metadata", "name"))
	body := doc
	if name == "" && typ == typeAgentRuns {
		group, task := str(lookup(obj, "spec", "group")), str(lookup(obj, "spec", "taskKey"))
		if group != "" && task != "" {
			name = group + "-" + task
			md, _ := obj["metadata"].(map[string]any)
			if md == nil {
				md = map[string]any{}
			}
			md["name"] = name
			obj["metadata"] = md
			if body, err = json.Marshal(obj); err != nil {
				return nil, err
			}
		}
	}
	if name == "" && typ != typeAgentRuns {
		return nil, fmt.Errorf("%s has no metadata.name", kind)
	}
	desc := kind
	if name != "" {
		desc += fmt.Sprintf(" %q", name)
	}
	return []applyTarget{{typ: typ, name: name, body: body, desc: desc}}, nil
}

func applyCmd() *cobra.Command {
	var files []string
	cmd := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Create or update resources from YAML or JSON files (kubectl style)",
		Long: `Create or update every resource in the files: multi-document YAML separated by ---, or JSON.
"-" reads stdin; a folder applies its .yaml, .yml and .json files. Each document goes to the
server by its kind (Agent, AgentRun, AgentGroup) and metadata.name, and one line says what
happened: agent/NAME created, configured or unchanged.`,
		Example: `  agentrun apply -f agent.yaml
  cat runs.yaml | agentrun apply -f -`,
		Args: exactArgs(0, "no arguments (the files go with -f)"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if len(files) == 0 {
				return usageError("give the files to apply with -f FILE (- for stdin)")
			}
			docs, err := loadDocs(files, cmd.InOrStdin())
			if err != nil {
				return err
			}
			if len(docs) == 0 {
				return usageError("no documents in %s", strings.Join(files, ", "))
			}
			var c *client.Client
			ctx, out, errOut := ctxOf(cmd), cmd.OutOrStdout(), cmd.ErrOrStderr()
			failed := 0
			fail := func(where, desc string, err error) {
				failed++
				if desc != "" {
					where += ": " + desc
				}
				fmt.Fprintf(errOut, "error: %s: %s\n", where, describe(err))
			}
			// Every document is read, planned and checked before any is sent: an apply with one
			// bad document applies nothing (no half-applied file).
			plans := make([][]applyTarget, len(docs))
			for i, d := range docs {
				where := fmt.Sprintf("%s (document %d)", d.where, i+1)
				if d.err != nil {
					fail(where, "", d.err)
					continue
				}
				targets, err := planApply(d.json)
				if err != nil {
					fail(where, "", err)
					continue
				}
				for _, t := range targets {
					if err := checkTarget(t); err != nil {
						fail(where, t.desc, err)
					}
				}
				plans[i] = targets
			}
			if failed > 0 {
				fmt.Fprintf(errOut, "nothing was applied (%s above)\n", workflow.CountErrors(failed))
				return &ExitError{Code: ExitFailure}
			}
			if c, err = newClient(); err != nil {
				return err
			}
			if n := dryRunAll(ctx, c, docs, plans, fail); n > 0 {
				fmt.Fprintf(errOut, "nothing was applied (%s above)\n", workflow.CountErrors(n))
				return &ExitError{Code: ExitFailure}
			}
			for i, d := range docs {
				targets := plans[i]
				for _, t := range targets {
					name, result, err := applyOne(ctx, c, t)
					if err != nil {
						fail(d.where, t.desc, err)
						continue
					}
					fmt.Fprintf(out, "%s/%s %s\n", t.typ.singular, name, result)
				}
			}
			if failed > 0 {
				return &ExitError{Code: ExitFailure}
			}
			return nil
		}),
	}
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "a file, folder or - (stdin) to apply; repeatable")
	return cmd
}

func applyOne(ctx context.Context, c *client.Client, t applyTarget) (name string, result client.ApplyResult, err error) {
	if t.name != "" {
		_, res, err := c.ApplyObject(ctx, t.typ.plural, t.name, t.body)
		return t.name, res, err
	}
	raw, err := c.CreateObject(ctx, t.typ.plural, t.body)
	if err != nil {
		return "", "", err
	}
	var o struct {
		Metadata api.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return "", "", fmt.Errorf("read the created resource: %w", err)
	}
	return o.Metadata.Name, client.Created, nil
}

// Wait.

func waitCmd() *cobra.Command {
	var forCond string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "wait TYPE/NAME --for=jsonpath='{.status.phase}'=Succeeded [--timeout=30s]",
		Short: "Wait until a resource's field has a value, or it is deleted (kubectl style)",
		Long: `Wait until a field of each named resource has the given value (compared as strings), or the
resource is deleted (--for=delete). The JSONPath subset is {.a.b}, {.a[0].b} and
{.metadata.labels.x}. A run or group that finished in another phase than the one awaited fails at
once, since it will never change.`,
		Example: `  agentrun wait agentrun/hello-agent-run --for=jsonpath='{.status.phase}'=Succeeded --timeout=8m
  agentrun wait ag/parallel-agents --for=jsonpath='{.status.phase}'=Succeeded --timeout=12m
  agentrun wait agentrun/old-run --for=delete`,
		Args: minArgs(1, "TYPE/NAME"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			typ, names, err := parseRefs(args)
			if err != nil {
				return err
			}
			if len(names) == 0 {
				return usageError("name what to wait for: %s/NAME", typ.singular)
			}
			if forCond == "" {
				return usageError("say what to wait for: --for=jsonpath='{.status.phase}'=Succeeded or --for=delete")
			}
			cond, err := parseFor(forCond)
			if err != nil {
				return usageError("%v", err)
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			deadline := time.Now().Add(timeout)
			for _, n := range names {
				if err := waitFor(ctxOf(cmd), c, typ, n, cond, timeout, deadline); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s.agentrun.dev/%s condition met\n", typ.singular, n)
			}
			return nil
		}),
	}
	cmd.Flags().StringVar(&forCond, "for", "", "the condition: jsonpath='{.path}'=VALUE or delete")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "give up after this long (exit 1)")
	return cmd
}

// terminalPhases never change once reached.
var terminalPhases = map[string]bool{string(api.PhaseSucceeded): true, string(api.PhaseFailed): true, string(api.PhaseCancelled): true}

// waitFor polls one resource every 250ms until cond holds or the deadline passes.
func waitFor(ctx context.Context, c *client.Client, typ resType, name string, cond waitCondition, timeout time.Duration, deadline time.Time) error {
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	what := "deletion"
	if !cond.deleted {
		what = cond.expr
		if cond.hasValue {
			what += "=" + cond.value
		}
	}
	current := "<unknown>"
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		raw, err := c.GetObject(wctx, typ.plural, name)
		switch e, isAPI := api.AsError(err); {
		case err == nil:
			doc, derr := decodeDoc(raw)
			if derr != nil {
				return derr
			}
			if cond.deleted {
				current = "exists"
				break
			}
			ok, cur := cond.met(doc)
			if ok {
				return nil
			}
			current = cur
			phase := str(lookup(doc, "status", "phase"))
			if (typ == typeAgentRuns || typ == typeAgentGroups) && len(cond.path) == 2 && cond.path[0].key == "status" &&
				cond.path[1].key == "phase" && cond.hasValue && terminalPhases[phase] {
				msg := phase
				if r := str(lookup(doc, "status", "reason")); r != "" {
					msg += " (" + r + ")"
				}
				if m := str(lookup(doc, "status", "message")); m != "" {
					msg += ": " + m
				}
				return &ExitError{Code: ExitFailure, Err: fmt.Errorf("%s/%s finished as %s; it will never be %s", typ.singular, name, msg, cond.value)}
			}
		case isAPI && e.Status == 404:
			if cond.deleted {
				return nil
			}
			return err
		case isAPI:
			return err
		case wctx.Err() != nil:
		default:
			current = "unreachable: " + err.Error()
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &ExitError{Code: ExitFailure, Err: fmt.Errorf("timed out after %s waiting for %s on %s/%s (currently: %s)", timeout, what, typ.singular, name, current)}
		case <-tick.C:
		}
	}
}

// Create.

func createCmd() *cobra.Command {
	cmd := groupCmd("create", "Create a run or a group from flags")
	cmd.AddCommand(createRunCmd(), createGroupCmd())
	return cmd
}

func createRunCmd() *cobra.Command {
	var agent, prompt, deadline, maxCost, group, taskKey, output string
	var dependsOn []string
	var keepAlive bool
	cmd := &cobra.Command{
		Use:     "agentrun NAME --agent A --prompt TEXT",
		Aliases: []string{"ar"},
		Short:   "Start a run of an agent (POST /v2/agentruns)",
		Example: `  agentrun create agentrun triage --agent hello-agent --prompt "Summarize the logs"`,
		Args:    rangeArgs(0, 1, "the run's name"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if agent == "" {
				return usageError("name the agent with --agent")
			}
			if err := checkOutput(output, "", "name", "json", "yaml"); err != nil {
				return err
			}
			r := api.AgentRun{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "AgentRun"}}
			if len(args) == 1 {
				r.Metadata.Name = args[0]
			}
			data, _, err := readArg(prompt, cmd.InOrStdin())
			if err != nil {
				return err
			}
			r.Spec = api.AgentRunSpec{Agent: agent, Input: string(data), KeepAlive: keepAlive, Deadline: deadline,
				MaxCostUSD: maxCost, Group: group, TaskKey: taskKey, DependsOn: dependsOn}
			c, err := newClient()
			if err != nil {
				return err
			}
			raw, err := c.CreateObject(ctxOf(cmd), client.AgentRuns, r)
			if err != nil {
				return err
			}
			return printCreated(cmd.OutOrStdout(), typeAgentRuns, raw, output)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&agent, "agent", "", "the agent to run (required)")
	f.StringVar(&prompt, "prompt", "", "the run's input, or @FILE")
	f.BoolVar(&keepAlive, "keep-alive", false, "keep the run open for follow-up messages")
	f.StringVar(&deadline, "deadline", "", "bound the run's lifetime: an RFC 3339 time or a duration such as 30m")
	f.StringVar(&maxCost, "max-cost-usd", "", "the run's spend cap in dollars (default: the agent's perRunMaxCostUSD)")
	f.StringVar(&group, "group", "", "the AgentGroup the run belongs to")
	f.StringVar(&taskKey, "task-key", "", "the run's task key in its group")
	f.StringSliceVar(&dependsOn, "depends-on", nil, "task keys of the group this run waits for")
	f.StringVarP(&output, "output", "o", "", "output: name, json or yaml (default: a line saying it was created)")
	return cmd
}

func createGroupCmd() *cobra.Command {
	var agent, maxCost, output string
	var maxActive, maxPending int
	cmd := &cobra.Command{
		Use:     "agentgroup NAME --agent A [--max-active N] [--max-cost X]",
		Aliases: []string{"ag"},
		Short:   "Create a group that runs many runs of one agent",
		Example: `  agentrun create agentgroup parallel-agents --agent parallel-agents-worker --max-active 2 --max-cost 0.60`,
		Args:    exactArgs(1, "the group's name"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if agent == "" {
				return usageError("name the agent with --agent")
			}
			if err := checkOutput(output, "", "name", "json", "yaml"); err != nil {
				return err
			}
			limits := map[string]any{}
			if cmd.Flags().Changed("max-active") {
				limits["maxActive"] = maxActive
			}
			if cmd.Flags().Changed("max-pending") {
				limits["maxPending"] = maxPending
			}
			if maxCost != "" {
				limits["maxCostUSD"] = maxCost
			}
			spec := map[string]any{"agent": agent}
			if len(limits) > 0 {
				spec["limits"] = limits
			}
			body := map[string]any{"apiVersion": api.APIVersion, "kind": "AgentGroup", "metadata": map[string]any{"name": args[0]}, "spec": spec}
			c, err := newClient()
			if err != nil {
				return err
			}
			raw, err := c.CreateObject(ctxOf(cmd), client.AgentGroups, body)
			if err != nil {
				return err
			}
			return printCreated(cmd.OutOrStdout(), typeAgentGroups, raw, output)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&agent, "agent", "", "the agent every run of the group runs (required)")
	f.IntVar(&maxActive, "max-active", 0, "how many runs go at once (default 10)")
	f.IntVar(&maxPending, "max-pending", 0, "how many unfinished runs the group takes (default 10000)")
	f.StringVar(&maxCost, "max-cost", "", "the group's spend cap in dollars")
	f.StringVarP(&output, "output", "o", "", "output: name, json or yaml (default: a line saying it was created)")
	return cmd
}

func printCreated(out io.Writer, typ resType, raw []byte, output string) error {
	if output == "json" || output == "yaml" {
		return writeRaw(out, raw, output)
	}
	var o struct {
		Metadata api.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return fmt.Errorf("decode the created %s: %w", typ.singular, err)
	}
	if output == "name" {
		_, err := fmt.Fprintf(out, "%s/%s\n", typ.singular, o.Metadata.Name)
		return err
	}
	_, err := fmt.Fprintf(out, "%s/%s created\n", typ.singular, o.Metadata.Name)
	return err
}
