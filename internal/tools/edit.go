package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

var editSpec = inputSpec{fields: []field{
	{name: "path", typ: typeString, required: true,
		desc: "File to edit, relative to the run folder."},
	{name: "old_string", typ: typeString, required: true,
		desc: "The exact text to replace, character for character, including whitespace and indentation (without read's line-number prefixes). " +
			"It must occur exactly once unless replace_all is true; include enough surrounding lines to make it unique."},
	{name: "new_string", typ: typeString, required: true,
		desc: "The text to put in its place (may be empty to delete old_string)."},
	{name: "replace_all", typ: typeBoolean,
		desc: "Replace every occurrence of old_string instead of requiring exactly one. Default false."},
}}

type editTool struct{}

func (editTool) Name() string { return "edit" }

func (editTool) Description() string {
	return "Edit a text file in the run folder by exact string replacement: old_string is replaced by new_string. " +
		"old_string must match the file exactly (whitespace, indentation and line breaks included) and, unless replace_all is true, occur exactly once; " +
		"otherwise nothing is changed and the error says whether it was not found or how many times it occurs. " +
		"Read the file first so you quote it exactly, and leave out the line-number prefixes read adds. " +
		"The file is rewritten atomically. To create a file or replace all of it, use write."
}

func (editTool) Schema() json.RawMessage { return editSpec.schema() }
func (editTool) ReadOnly() bool          { return false }

func (t editTool) Run(ctx context.Context, env Env, input json.RawMessage) (Result, error) {
	return runInFolder(ctx, env, input, editSpec, t.run)
}

func (editTool) run(ctx context.Context, root *os.Root, a args) (string, error) {
	display, _ := a.str("path")
	oldS, _ := a.str("old_string")
	newS, _ := a.str("new_string")
	all := a.boolean("replace_all")
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
