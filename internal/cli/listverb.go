package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"agentrun.dev/agentrun/client"
)

// listVerb is the one shape of a list command (`agentrun triggers list`, `skills list`,
// `runners`, `env list`, `runs approvals RUN`): fetch the items, print a table, a row each, or
// with -o the items as JSON or YAML.
type listVerb[T any] struct {
	use, short, long string
	// fetch gets the items of a command without arguments.
	fetch func(c *client.Client, ctx context.Context) ([]T, error)
	// arg, when set, says what the command's one argument is ("the run's name"), and of gets the
	// items of the one it names (fetch is then unset).
	arg    string
	of     func(c *client.Client, ctx context.Context, name string) ([]T, error)
	header []string
	rows   func([]T) [][]string
	// value, when set, is what -o json|yaml prints of the items; without it the command has no
	// -o flag (what it prints is the table alone).
	value func([]T) any
}

// rowEach makes listVerb.rows of a function of one item.
func rowEach[T any](row func(T) []string) func([]T) [][]string {
	return func(items []T) [][]string {
		rows := [][]string{}
		for _, it := range items {
			rows = append(rows, row(it))
		}
		return rows
	}
}

func (v listVerb[T]) cmd() *cobra.Command {
	var output string
	n, what := 0, "no arguments"
	if v.arg != "" {
		n, what = 1, v.arg
	}
	cmd := &cobra.Command{
		Use:   v.use,
		Short: v.short,
		Long:  v.long,
		Args:  exactArgs(n, what),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "", "json", "yaml"); err != nil {
				return err
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			var items []T
			if v.arg != "" {
				items, err = v.of(c, ctxOf(cmd), args[0])
			} else {
				items, err = v.fetch(c, ctxOf(cmd))
			}
			if err != nil {
				return err
			}
			if output != "" {
				return writeValue(cmd.OutOrStdout(), v.value(items), output)
			}
			return writeTable(cmd.OutOrStdout(), v.header, v.rows(items))
		}),
	}
	if v.value != nil {
		cmd.Flags().StringVarP(&output, "output", "o", "", "output: json or yaml (default: a table)")
	}
	return cmd
}

// listObjects fetches GET /v2/PLURAL's items, decoded as T.
func listObjects[T any](plural string) func(c *client.Client, ctx context.Context) ([]T, error) {
	return func(c *client.Client, ctx context.Context) ([]T, error) {
		raw, err := c.ListObjects(ctx, plural, nil)
		if err != nil {
			return nil, err
		}
		var list client.List[T]
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("decode %s: %w", plural, err)
		}
		return list.Items, nil
	}
}

// historyVerb is the one shape of a history command (`triggers history`, `webhooks history`):
// one resource's newest --limit items as a table, or with -o as the server answered them.
type historyVerb[I any] struct {
	use, short, example string
	// arg names the argument ("the trigger's name"); items what is listed ("fires"), for --limit
	// and errors.
	arg, items string
	fetch      func(c *client.Client, ctx context.Context, name string, limit int) (json.RawMessage, error)
	header     []string
	row        func(I) []string
}

func (v historyVerb[I]) cmd() *cobra.Command {
	var output string
	var limit int
	cmd := &cobra.Command{
		Use:     v.use,
		Short:   v.short,
		Example: v.example,
		Args:    exactArgs(1, v.arg),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "", "json", "yaml"); err != nil {
				return err
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			raw, err := v.fetch(c, ctxOf(cmd), args[0], limit)
			if err != nil {
				return err
			}
			if output != "" {
				return writeRaw(cmd.OutOrStdout(), raw, output)
			}
			var h struct {
				Items []I `json:"items"`
			}
			if err := json.Unmarshal(raw, &h); err != nil {
				return fmt.Errorf("decode %s: %w", v.items, err)
			}
			return writeTable(cmd.OutOrStdout(), v.header, rowEach(v.row)(h.Items))
		}),
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "json or yaml")
	cmd.Flags().IntVar(&limit, "limit", 50, "how many "+v.items+", newest first (0: all)")
	return cmd
}
