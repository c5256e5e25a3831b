package tools

import (
	"agentrun.dev/agentrun/internal/catalog"
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
)

func editRun(ctx context.Context, root *os.Root, in *catalog.Edit) (string, error) {
	display, oldS, newS, all := in.Path, in.OldString, in.NewString, in.ReplaceAll
	if oldS == "" {
		return "", agentErrorf("old_string is empty; give the exact text to replace (to create or overwrite a file, use write)")
	}
	if oldS == newS {
		return "", agentErrorf("old_string and new_string are identical; nothing to change")
	}
	p, err := agentPath(root, display)
	if err != nil {
		return "", err
	}
	fi, err := root.Stat(p)
	if err != nil {
		return "", pathErr(display, err)
	}
	if fi.IsDir() {
		return "", agentErrorf("%q is a directory, not a file", display)
	}
	if !fi.Mode().IsRegular() {
		return "", agentErrorf("%q is not a regular file (%s)", display, fileKind(fi.Mode()))
	}
	if fi.Size() > maxWrite {
		return "", agentErrorf("%q is %d bytes; edit works on files up to 10 MiB", display, fi.Size())
	}
	data, err := root.ReadFile(p)
	if err != nil {
		return "", pathErr(display, err)
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return "", agentErrorf("%q looks like a binary file (it contains NUL bytes); edit only changes text files", display)
	}
	text := string(data)
	n := strings.Count(text, oldS)
	switch {
	case n == 0:
		return "", agentErrorf("old_string not found in %q; it must match the file exactly, including whitespace and indentation (read the file to check)", display)
	case n > 1 && !all:
		return "", agentErrorf("old_string occurs %d times in %q; include more surrounding text to make it unique, or set replace_all to true to replace all %d", n, display, n)
	}
	if !all {
		n = 1
	}
	out := strings.Replace(text, oldS, newS, n)
	if len(out) > maxWrite {
		return "", agentErrorf("the edited file would be %d bytes; files are limited to 10 MiB", len(out))
	}
	if err := writeFile(ctx, root, display, p, []byte(out)); err != nil {
		return "", err
	}
	if n == 1 {
		return fmt.Sprintf("replaced 1 occurrence in %s", display), nil
	}
	return fmt.Sprintf("replaced %d occurrences in %s", n, display), nil
}
