package tools

import (
	"agentrun.dev/agentrun/internal/catalog"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
)

// maxListEntries bounds what one ls returns.
const maxListEntries = 1000

func lsRun(ctx context.Context, root *os.Root, in *catalog.Ls) (string, error) {
	display := "."
	if in.Path != nil {
		display = *in.Path
	}
	p, err := agentPath(root, display)
	if err != nil {
		return "", err
	}
	fi, err := root.Lstat(p)
	if err != nil {
		return "", pathErr(display, err)
	}
	if !fi.IsDir() {
		return entryLine(root, p, fi.Name(), fi.Mode()) + "\n", nil
	}
	d, err := root.Open(p)
	if err != nil {
		return "", pathErr(display, err)
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return "", pathErr(display, err)
	}
	if len(entries) == 0 {
		return fmt.Sprintf("%s is an empty folder\n", display), nil
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	var b strings.Builder
	for i, e := range entries {
		if i == maxListEntries {
			fmt.Fprintf(&b, "[truncated: showed %d of %d entries]\n", maxListEntries, len(entries))
			break
		}
		if i%100 == 0 {
			if err := ctx.Err(); err != nil {
				return "", err
			}
		}
		b.WriteString(entryLine(root, path.Join(p, e.Name()), e.Name(), e.Type()))
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// entryLine formats one entry: folders with a trailing "/", symbolic links
// as "name -> target".
func entryLine(root *os.Root, p, name string, mode fs.FileMode) string {
	switch {
	case mode&fs.ModeSymlink != 0:
		target, err := root.Readlink(p)
		if err != nil {
			return name + " -> ?"
		}
		return name + " -> " + target
	case mode.IsDir():
		return name + "/"
	}
	return name
}
