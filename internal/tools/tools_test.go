package tools

import (
	"agentrun.dev/agentrun/internal/catalog"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// folder is a run folder with a sibling folder outside it holding a file
// the tools must never reach.
type folder struct {
	root    string // the run folder
	outside string // a folder next to it
}

const secret = "SECRET outside the run folder\n"

func newFolder(t *testing.T) folder {
	t.Helper()
	base := t.TempDir()
	f := folder{root: filepath.Join(base, "run"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{f.root, f.outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(f.outside, "secret.txt"), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f folder) file(t *testing.T, name, content string) {
	t.Helper()
	p := filepath.Join(f.root, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (f folder) symlink(t *testing.T, target, name string) {
	t.Helper()
	if err := os.Symlink(target, filepath.Join(f.root, filepath.FromSlash(name))); err != nil {
		t.Fatal(err)
	}
}

func (f folder) read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.root, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// snapshot records every entry below dir with its content or link target.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			m[p] = "link:" + target
			return err
		case d.IsDir():
			m[p] = "dir"
		default:
			b, err := os.ReadFile(p)
			m[p] = string(b)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func call(t *testing.T, root, name string, input any) Result {
	t.Helper()
	tool, ok := Lookup(name)
	if !ok {
		t.Fatalf("Lookup(%q) found nothing", name)
	}
	var raw []byte
	switch in := input.(type) {
	case string:
		raw = []byte(in)
	default:
		var err error
		if raw, err = json.Marshal(in); err != nil {
			t.Fatal(err)
		}
	}
	res, err := tool.Run(context.Background(), Env{Root: root}, raw)
	if err != nil {
		t.Fatalf("%s %s: unexpected error: %v", name, raw, err)
	}
	return res
}

func mustOK(t *testing.T, r Result) string {
	t.Helper()
	if r.IsError {
		t.Fatalf("unexpected error result: %s", r.Content)
	}
	return r.Content
}

func mustFail(t *testing.T, r Result, want ...string) {
	t.Helper()
	if !r.IsError {
		t.Fatalf("expected an error result, got %q", r.Content)
	}
	for _, w := range want {
		if !strings.Contains(r.Content, w) {
			t.Fatalf("error %q does not mention %q", r.Content, w)
		}
	}
}

type M = map[string]any

func TestEscapesRefused(t *testing.T) {
	t.Parallel()
	type setup func(t *testing.T, f folder)
	cases := []struct {
		name  string
		setup setup
		path  func(f folder) string
		// writes says whether writing tools may be tried on this path
		// (never on real system files).
		writes bool
	}{
		{name: "dotdot", path: func(folder) string { return "../outside/secret.txt" }, writes: true},
		{name: "dotdot new file", path: func(folder) string { return "../x" }, writes: true},
		{name: "dotdot in the middle", path: func(folder) string { return "a/../../outside/secret.txt" }, writes: true,
			setup: func(t *testing.T, f folder) { f.file(t, "a/keep.txt", "k") }},
		{name: "absolute system file", path: func(folder) string { return "/etc/passwd" }},
		{name: "absolute outside file", path: func(f folder) string { return filepath.Join(f.outside, "secret.txt") }, writes: true},
		{name: "absolute path of the run folder", path: func(f folder) string { return filepath.Join(f.root, "a.txt") }, writes: true},
		{name: "workspace dotdot", path: func(folder) string { return "/workspace/../outside/secret.txt" }, writes: true},
		{name: "symlink to /etc", path: func(folder) string { return "etc/passwd" },
			setup: func(t *testing.T, f folder) { f.symlink(t, "/etc", "etc") }},
		{name: "symlink to /etc itself", path: func(folder) string { return "etc" },
			setup: func(t *testing.T, f folder) { f.symlink(t, "/etc", "etc") }},
		{name: "symlink to outside file", path: func(folder) string { return "link.txt" }, writes: true,
			setup: func(t *testing.T, f folder) { f.symlink(t, filepath.Join(f.outside, "secret.txt"), "link.txt") }},
		{name: "relative symlink to outside file", path: func(folder) string { return "link.txt" }, writes: true,
			setup: func(t *testing.T, f folder) { f.symlink(t, "../outside/secret.txt", "link.txt") }},
		{name: "symlinked dir in the middle, existing file", path: func(folder) string { return "sub/out/secret.txt" }, writes: true,
			setup: func(t *testing.T, f folder) { f.file(t, "sub/x", ""); f.symlink(t, f.outside, "sub/out") }},
		{name: "symlinked dir in the middle, new file", path: func(folder) string { return "sub/out/new.txt" }, writes: true,
			setup: func(t *testing.T, f folder) { f.file(t, "sub/x", ""); f.symlink(t, f.outside, "sub/out") }},
		{name: "symlinked dir in the middle, new folders", path: func(folder) string { return "out/deep/er/new.txt" }, writes: true,
			setup: func(t *testing.T, f folder) { f.symlink(t, "../outside", "out") }},
		{name: "dangling symlink to outside", path: func(folder) string { return "dangling.txt" }, writes: true,
			setup: func(t *testing.T, f folder) { f.symlink(t, filepath.Join(f.outside, "new.txt"), "dangling.txt") }},
		{name: "dangling relative symlink to outside", path: func(folder) string { return "dangling.txt" }, writes: true,
			setup: func(t *testing.T, f folder) { f.symlink(t, "../outside/new.txt", "dangling.txt") }},
		{name: "chain of symlinks leading out", path: func(folder) string { return "one/secret.txt" }, writes: true,
			setup: func(t *testing.T, f folder) {
				f.file(t, "d/x", "")
				f.symlink(t, "d/two", "one")
				f.symlink(t, "../../outside", "d/two")
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFolder(t)
			f.file(t, "inside.txt", "inside\n")
			if c.setup != nil {
				c.setup(t, f)
			}
			p := c.path(f)
			before, rootBefore := snapshot(t, f.outside), snapshot(t, f.root)
			calls := []struct {
				tool  string
				input M
				write bool
			}{
				{"read", M{"path": p}, false},
				{"ls", M{"path": p}, false},
				{"grep", M{"pattern": ".", "path": p}, false},
				{"write", M{"path": p, "content": "pwned\n"}, true},
				{"edit", M{"path": p, "old_string": "SECRET", "new_string": "pwned"}, true},
			}
			for _, cl := range calls {
				if cl.write && !c.writes {
					continue
				}
				r := call(t, f.root, cl.tool, cl.input)
				if !r.IsError || !(strings.Contains(r.Content, "escapes the run folder") || strings.Contains(r.Content, "outside the run folder")) {
					t.Errorf("%s %q: got %+v, want refusal", cl.tool, p, r)
				}
				if !strings.Contains(r.Content, fmt.Sprintf("%q", p)) {
					t.Errorf("%s: message %q does not name the path %q", cl.tool, r.Content, p)
				}
				if strings.Contains(r.Content, "SECRET") || strings.Contains(r.Content, "root:") {
					t.Errorf("%s leaked outside content: %q", cl.tool, r.Content)
				}
				if after := snapshot(t, f.outside); !reflect.DeepEqual(before, after) {
					t.Fatalf("%s changed the outside folder:\nbefore %v\nafter  %v", cl.tool, before, after)
				}
				if after := snapshot(t, f.root); !reflect.DeepEqual(rootBefore, after) {
					t.Fatalf("%s changed the run folder:\nbefore %v\nafter  %v", cl.tool, rootBefore, after)
				}
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(f.root), "x")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("a file appeared next to the run folder: %v", err)
			}
		})
	}
}

// The os.Root underneath refuses an escape even if the resolution above it
// were skipped (or raced by a link changed after the check).
func TestRootIsTheBackstop(t *testing.T) {
	t.Parallel()
	f := newFolder(t)
	f.symlink(t, f.outside, "out")
	before := snapshot(t, f.outside)
	root, err := os.OpenRoot(f.root)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, p := range []string{"out/new.txt", "out/secret.txt", "out/a/b/c.txt"} {
		err := writeFile(context.Background(), root, p, p, []byte("pwned"))
		var ae *agentError
		if !errors.As(err, &ae) || !strings.Contains(ae.msg, "escapes the run folder") {
			t.Errorf("writeFile(%q) = %v, want an escape refusal", p, err)
		}
	}
	if after := snapshot(t, f.outside); !reflect.DeepEqual(before, after) {
		t.Fatalf("outside folder changed:\nbefore %v\nafter  %v", before, after)
	}
}

func TestGrepDoesNotFollowLinksOut(t *testing.T) {
	t.Parallel()
	f := newFolder(t)
	f.file(t, "a.txt", "SECRET inside\n")
	f.symlink(t, f.outside, "out")
	f.symlink(t, filepath.Join(f.outside, "secret.txt"), "s.txt")
	f.symlink(t, "/etc", "etc")
	got := mustOK(t, call(t, f.root, "grep", M{"pattern": "SECRET|root"}))
	if got != "a.txt:1:SECRET inside\n" {
		t.Fatalf("grep = %q", got)
	}
}

func TestWorkspacePaths(t *testing.T) {
	t.Parallel()
	f := newFolder(t)
	mustOK(t, call(t, f.root, "write", M{"path": "/workspace/a.txt", "content": "hello\n"}))
	if got := f.read(t, "a.txt"); got != "hello\n" {
		t.Fatalf("a.txt = %q", got)
	}
	mustOK(t, call(t, f.root, "write", M{"path": "/workspace//sub/b.txt", "content": "b"}))
	if got := f.read(t, "sub/b.txt"); got != "b" {
		t.Fatalf("sub/b.txt = %q", got)
	}
	if got := mustOK(t, call(t, f.root, "read", M{"path": "/workspace/a.txt"})); got != "     1\thello\n" {
		t.Fatalf("read = %q", got)
	}
	if got := mustOK(t, call(t, f.root, "ls", M{"path": "/workspace"})); got != "a.txt\nsub/\n" {
		t.Fatalf("ls = %q", got)
	}
	if got := mustOK(t, call(t, f.root, "ls", M{"path": "/workspace/"})); got != "a.txt\nsub/\n" {
		t.Fatalf("ls = %q", got)
	}
	// A link written inside a sandbox as /workspace/... points into the run folder.
	f.symlink(t, "/workspace/sub", "ws")
	if got := mustOK(t, call(t, f.root, "read", M{"path": "ws/b.txt"})); got != "     1\tb\n" {
		t.Fatalf("read through /workspace link = %q", got)
	}
	mustFail(t, call(t, f.root, "read", M{"path": "/workspacex/a.txt"}), "outside the run folder")
}

func TestSymlinksInsideAreFollowed(t *testing.T) {
	t.Parallel()
	f := newFolder(t)
	f.file(t, "real/target.txt", "one\n")
	f.symlink(t, "real", "dir")
	f.symlink(t, "real/target.txt", "file.txt")
	f.symlink(t, "../real/target.txt", "real/self.txt")
	f.symlink(t, "real/new.txt", "dangling.txt")

	if got := mustOK(t, call(t, f.root, "read", M{"path": "dir/target.txt"})); got != "     1\tone\n" {
		t.Fatalf("read = %q", got)
	}
	mustOK(t, call(t, f.root, "write", M{"path": "file.txt", "content": "two\n"}))
	if got := f.read(t, "real/target.txt"); got != "two\n" {
		t.Fatalf("target = %q", got)
	}
	if target, err := os.Readlink(filepath.Join(f.root, "file.txt")); err != nil || target != "real/target.txt" {
		t.Fatalf("link replaced: %q %v", target, err)
	}
	mustOK(t, call(t, f.root, "edit", M{"path": "dir/self.txt", "old_string": "two", "new_string": "three"}))
	if got := f.read(t, "real/target.txt"); got != "three\n" {
		t.Fatalf("target = %q", got)
	}
	// A dangling link inside the folder: the write creates its target.
	mustOK(t, call(t, f.root, "write", M{"path": "dangling.txt", "content": "new"}))
	if got := f.read(t, "real/new.txt"); got != "new" {
		t.Fatalf("new = %q", got)
	}
	// Loops are refused, not followed forever.
	f.symlink(t, "loop2", "loop1")
	f.symlink(t, "loop1", "loop2")
	mustFail(t, call(t, f.root, "read", M{"path": "loop1"}), "too many levels of symbolic links")
}

func TestInputValidation(t *testing.T) {
	t.Parallel()
	f := newFolder(t)
	f.file(t, "a.txt", "a\n")
	cases := []struct {
		tool, input string
		want        []string
	}{
		{"read", `{"path": "a.txt", "colour": 1}`, []string{`unknown field "colour"`, "path, offset, limit"}},
		{"read", `{"path": 5}`, []string{`field "path" must be a string`, "number"}},
		{"read", `{"path": "a.txt", "offset": "2"}`, []string{`field "offset" must be an integer`}},
		{"read", `{"path": "a.txt", "offset": 1.5}`, []string{`field "offset" must be an integer`}},
		{"read", `{"path": "a.txt", "offset": 0}`, []string{`field "offset" must be at least 1`}},
		{"read", `{"path": "a.txt", "limit": -3}`, []string{`field "limit" must be at least 1`}},
		{"read", `{}`, []string{`missing required field "path"`}},
		{"read", ``, []string{`missing required field "path"`}},
		{"read", `{"path": null}`, []string{`missing required field "path"`}},
		{"read", `{"path": "a.txt"`, []string{"not valid JSON"}},
		{"read", `["a.txt"]`, []string{"must be a JSON object"}},
		{"read", `{"path": ""}`, []string{"path is empty"}},
		{"write", `{"path": "b.txt"}`, []string{`missing required field "content"`}},
		{"write", `{"path": "b.txt", "content": ["x"]}`, []string{`field "content" must be a string`, "array"}},
		{"edit", `{"path": "a.txt", "old_string": "a", "new_string": "b", "replace_all": "yes"}`, []string{`field "replace_all" must be a boolean`}},
		{"ls", `{"dir": "."}`, []string{`unknown field "dir"`}},
		{"grep", `{"pattern": "a", "recursive": true}`, []string{`unknown field "recursive"`}},
	}
	for _, c := range cases {
		t.Run(c.tool+" "+c.input, func(t *testing.T) {
			t.Parallel()
			mustFail(t, call(t, f.root, c.tool, c.input), c.want...)
		})
	}
	// Accepted forms: integral floats, null optional fields.
	mustOK(t, call(t, f.root, "read", `{"path": "a.txt", "offset": 1.0, "limit": null}`))
	mustOK(t, call(t, f.root, "ls", `null`))
}

func TestRead(t *testing.T) {
	t.Parallel()
	f := newFolder(t)
	f.file(t, "five.txt", "one\ntwo\nthree\nfour\nfive\n")
	f.file(t, "nonl.txt", "a\nb")
	f.file(t, "empty.txt", "")
	f.file(t, "bin.dat", "abc\x00def")
	f.file(t, "dir/x.txt", "x")
	cases := []struct {
		name  string
		input M
		want  string
		fails []string
	}{
		{"whole", M{"path": "five.txt"}, "     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour\n     5\tfive\n", nil},
		{"offset", M{"path": "five.txt", "offset": 4}, "     4\tfour\n     5\tfive\n", nil},
		{"limit", M{"path": "five.txt", "limit": 2}, "     1\tone\n     2\ttwo\n", nil},
		{"offset and limit", M{"path": "five.txt", "offset": 2, "limit": 2}, "     2\ttwo\n     3\tthree\n", nil},
		{"no final newline", M{"path": "nonl.txt"}, "     1\ta\n     2\tb\n", nil},
		{"empty", M{"path": "empty.txt"}, `"empty.txt" is empty`, nil},
		{"offset past end", M{"path": "five.txt", "offset": 9}, "", []string{"offset 9 is past the end", "5 lines"}},
		{"missing", M{"path": "nope.txt"}, "", []string{`"nope.txt" does not exist`}},
		{"binary", M{"path": "bin.dat"}, "", []string{`"bin.dat"`, "binary"}},
		{"directory", M{"path": "dir"}, "", []string{`"dir" is a directory`, "ls"}},
		{"through a file", M{"path": "five.txt/x"}, "", []string{"not a directory"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := call(t, f.root, "read", c.input)
			if c.fails != nil {
				mustFail(t, r, c.fails...)
				return
			}
			if got := mustOK(t, r); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestReadTruncates(t *testing.T) {
	t.Parallel()
	f := newFolder(t)
	line := strings.Repeat("x", 99) // 100 bytes with its newline
	f.file(t, "big.txt", strings.Repeat(line+"\n", 5000))
	got := mustOK(t, call(t, f.root, "read", M{"path": "big.txt"}))
	if len(got) > maxReadOutput+200 {
		t.Fatalf("output is %d bytes", len(got))
	}
	if !strings.Contains(got, "[truncated at 256 KiB") || !strings.HasPrefix(got, "     1\t"+line+"\n") {
		t.Fatalf("no truncation note or wrong start: %q", got[len(got)-200:])
	}
	// The note's offset continues exactly after the last line shown.
	var first, last, next int
	if _, err := fmt.Sscanf(got[strings.LastIndex(got, "[truncated"):], "[truncated at 256 KiB: showed lines %d-%d; call read with offset=%d", &first, &last, &next); err != nil {
		t.Fatal(err)
	}
	if first != 1 || next != last+1 || !strings.Contains(got, fmt.Sprintf("%6d\t", last)) || strings.Contains(got, fmt.Sprintf("%6d\t", next)) {
		t.Fatalf("lines %d-%d, next %d", first, last, next)
	}
	rest := mustOK(t, call(t, f.root, "read", M{"path": "big.txt", "offset": next}))
	if !strings.HasPrefix(rest, fmt.Sprintf("%6d\t", next)) {
		t.Fatalf("continuation starts %q", rest[:20])
	}

	// One line larger than the budget.
	f.file(t, "oneline.txt", strings.Repeat("y", 400<<10))
	got = mustOK(t, call(t, f.root, "read", M{"path": "oneline.txt"}))
	if len(got) > maxReadOutput+200 || !strings.Contains(got, "[truncated at 256 KiB") {
		t.Fatalf("one long line: %d bytes, ends %q", len(got), got[len(got)-100:])
	}
}

func TestReadBinaryAfterStart(t *testing.T) {
	t.Parallel()
	f := newFolder(t)
	f.file(t, "late.bin", strings.Repeat("text\n", 4000)+"\x00")
	mustFail(t, call(t, f.root, "read", M{"path": "late.bin"}), "binary")
}

func TestWrite(t *testing.T) {
	t.Parallel()
	f := newFolder(t)
	r := call(t, f.root, "write", M{"path": "a/b/c.txt", "content": "hello"})
	if got := mustOK(t, r); got != "wrote 5 bytes to a/b/c.txt" {
		t.Fatalf("got %q", got)
	}
	if got := f.read(t, "a/b/c.txt"); got != "hello" {
		t.Fatalf("content %q", got)
	}
	// Overwrite keeps the file's permissions.
	if err := os.Chmod(filepath.Join(f.root, "a/b/c.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustOK(t, call(t, f.root, "write", M{"path": "a/b/c.txt", "content": ""}))
	fi, err := os.Stat(filepath.Join(f.root, "a/b/c.txt"))
	if err != nil || fi.Size() != 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("after overwrite: %v %v", fi, err)
	}
	// No temporary files are left behind.
	entries, _ := os.ReadDir(filepath.Join(f.root, "a/b"))
	if len(entries) != 1 {
		t.Fatalf("entries %v", entries)
	}

	mustFail(t, call(t, f.root, "write", M{"path": "a", "content": "x"}), `"a" is a directory`)
	mustFail(t, call(t, f.root, "write", M{"path": ".", "content": "x"}), "run folder itself")
	mustFail(t, call(t, f.root, "write", M{"path": "a/b/c.txt/d", "content": "x"}), "not a directory")
	mustFail(t, call(t, f.root, "write", M{"path": "big", "content": strings.Repeat("z", maxWrite+1)}), "10 MiB")
	if _, err := os.Stat(filepath.Join(f.root, "big")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("big was written")
	}
	mustOK(t, call(t, f.root, "write", M{"path": "max", "content": strings.Repeat("z", maxWrite)}))
}

func TestEdit(t *testing.T) {
	t.Parallel()
	const text = "alpha beta\ngamma beta\ndelta\n"
	cases := []struct {
		name  string
		input M
		want  string // content after, or "" when it must fail
		msg   string // result content, or a part of the error
	}{
		{"unique", M{"old_string": "delta", "new_string": "DELTA"}, "alpha beta\ngamma beta\nDELTA\n", "replaced 1 occurrence in f.txt"},
		{"multi-line", M{"old_string": "beta\ngamma", "new_string": "b\ng"}, "alpha b\ng beta\ndelta\n", "replaced 1 occurrence"},
		{"delete", M{"old_string": "delta\n", "new_string": ""}, "alpha beta\ngamma beta\n", "replaced 1 occurrence"},
		{"replace all", M{"old_string": "beta", "new_string": "B", "replace_all": true}, "alpha B\ngamma B\ndelta\n", "replaced 2 occurrences in f.txt"},
		{"not found", M{"old_string": "epsilon", "new_string": "x"}, "", `old_string not found in "f.txt"`},
		{"whitespace matters", M{"old_string": "alpha  beta", "new_string": "x"}, "", "not found"},
		{"ambiguous", M{"old_string": "beta", "new_string": "x"}, "", "occurs 2 times"},
		{"identical", M{"old_string": "beta", "new_string": "beta"}, "", "identical"},
		{"empty old", M{"old_string": "", "new_string": "x"}, "", "old_string is empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFolder(t)
			f.file(t, "f.txt", text)
			in := M{"path": "f.txt"}
			for k, v := range c.input {
				in[k] = v
			}
			r := call(t, f.root, "edit", in)
			if c.want == "" {
				mustFail(t, r, c.msg)
				if got := f.read(t, "f.txt"); got != text {
					t.Fatalf("file changed on error: %q", got)
				}
				return
			}
			if got := mustOK(t, r); !strings.Contains(got, c.msg) {
				t.Fatalf("result %q, want %q", got, c.msg)
			}
			if got := f.read(t, "f.txt"); got != c.want {
				t.Fatalf("content %q, want %q", got, c.want)
			}
		})
	}
	t.Run("missing and binary", func(t *testing.T) {
		t.Parallel()
		f := newFolder(t)
		f.file(t, "b.bin", "a\x00b")
		mustFail(t, call(t, f.root, "edit", M{"path": "nope", "old_string": "a", "new_string": "b"}), `"nope" does not exist`)
		mustFail(t, call(t, f.root, "edit", M{"path": "b.bin", "old_string": "a", "new_string": "b"}), "binary")
	})
}

func TestLs(t *testing.T) {
	t.Parallel()
	f := newFolder(t)
	f.file(t, "b.txt", "")
	f.file(t, "a/x.txt", "")
	f.file(t, ".hidden", "")
	f.file(t, "C.md", "")
	if err := os.Mkdir(filepath.Join(f.root, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.symlink(t, "b.txt", "link")
	f.symlink(t, "/etc", "etc")
	cases := []struct {
		input M
		want  string
		fail  string
	}{
		{M{}, ".hidden\nC.md\na/\nb.txt\nempty/\netc -> /etc\nlink -> b.txt\n", ""},
		{M{"path": "."}, ".hidden\nC.md\na/\nb.txt\nempty/\netc -> /etc\nlink -> b.txt\n", ""},
		{M{"path": "a"}, "x.txt\n", ""},
		{M{"path": "a/"}, "x.txt\n", ""},
		{M{"path": "a/x.txt"}, "x.txt\n", ""},
		{M{"path": "empty"}, "empty is an empty folder\n", ""},
		{M{"path": "nope"}, "", `"nope" does not exist`},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.input), func(t *testing.T) {
			t.Parallel()
			r := call(t, f.root, "ls", c.input)
			if c.fail != "" {
				mustFail(t, r, c.fail)
				return
			}
			if got := mustOK(t, r); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestGrep(t *testing.T) {
	t.Parallel()
	f := newFolder(t)
	f.file(t, "notes.md", "# Title\nsome todo here\nTODO later\n")
	f.file(t, "src/main.go", "package main\n// todo: fix\n")
	f.file(t, "src/deep/x.md", "nothing\ntodo deep\n")
	f.file(t, "bin.dat", "todo\x00todo")
	f.file(t, ".git/config", "todo in git\n")
	f.file(t, ".hidden.md", "todo hidden\n")
	f.symlink(t, "notes.md", "alias.md")
	cases := []struct {
		name  string
		input M
		want  string
		fail  []string
	}{
		{"all", M{"pattern": "todo"}, ".hidden.md:1:todo hidden\nnotes.md:2:some todo here\nsrc/deep/x.md:2:todo deep\nsrc/main.go:2:// todo: fix\n", nil},
		{"case-insensitive", M{"pattern": "(?i)^todo"}, ".hidden.md:1:todo hidden\nnotes.md:3:TODO later\nsrc/deep/x.md:2:todo deep\n", nil},
		{"glob", M{"pattern": "todo", "glob": "*.md"}, ".hidden.md:1:todo hidden\nnotes.md:2:some todo here\nsrc/deep/x.md:2:todo deep\n", nil},
		{"path", M{"pattern": "todo", "path": "src"}, "src/deep/x.md:2:todo deep\nsrc/main.go:2:// todo: fix\n", nil},
		{"single file", M{"pattern": "T", "path": "notes.md", "glob": "*.go"}, "notes.md:1:# Title\nnotes.md:3:TODO later\n", nil},
		{"no match", M{"pattern": "zebra"}, "no matches for \"zebra\" in .\n", nil},
		{"bad pattern", M{"pattern": "(unclosed"}, "", []string{`invalid pattern "(unclosed"`, "missing closing )"}},
		{"bad glob", M{"pattern": "x", "glob": "[a"}, "", []string{`invalid glob "[a"`}},
		{"glob with slash", M{"pattern": "x", "glob": "src/*.go"}, "", []string{"file names only"}},
		{"missing path", M{"pattern": "x", "path": "nope"}, "", []string{`"nope" does not exist`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := call(t, f.root, "grep", c.input)
			if c.fail != nil {
				mustFail(t, r, c.fail...)
				return
			}
			if got := mustOK(t, r); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestGrepLimits(t *testing.T) {
	t.Parallel()
	f := newFolder(t)
	f.file(t, "many.txt", strings.Repeat("match\n", 600))
	f.file(t, "long.txt", "match"+strings.Repeat("é", 1000)+"\n")
	got := mustOK(t, call(t, f.root, "grep", M{"pattern": "match", "path": "many.txt"}))
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != maxGrepMatches+1 || !strings.HasPrefix(lines[maxGrepMatches], "[truncated: stopped at 500 matches") {
		t.Fatalf("%d lines, last %q", len(lines), lines[len(lines)-1])
	}
	// Exactly 500 matches: no note.
	f.file(t, "five.txt", strings.Repeat("match\n", 500))
	if got := mustOK(t, call(t, f.root, "grep", M{"pattern": "match", "path": "five.txt"})); strings.Contains(got, "truncated") {
		t.Fatal("note without truncation")
	}
	got = mustOK(t, call(t, f.root, "grep", M{"pattern": "match", "path": "long.txt"}))
	if len(got) > maxGrepLine+50 || !strings.HasSuffix(got, " [...]\n") || !strings.HasPrefix(got, "long.txt:1:match") {
		t.Fatalf("long line: %q", got)
	}
}

func TestCancelled(t *testing.T) {
	t.Parallel()
	f := newFolder(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, name := range []string{"read", "write", "edit", "ls", "grep"} {
		tool, _ := Lookup(name)
		if _, err := tool.Run(ctx, Env{Root: f.root}, json.RawMessage(`{"path": "a", "pattern": "x"}`)); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: err %v, want context.Canceled", name, err)
		}
	}
}

func TestBadEnvIsAnError(t *testing.T) {
	t.Parallel()
	for _, root := range []string{"", "relative", filepath.Join(t.TempDir(), "missing")} {
		tool, _ := Lookup("ls")
		if _, err := tool.Run(context.Background(), Env{Root: root}, nil); err == nil {
			t.Errorf("root %q: no error", root)
		}
	}
}

func TestDefinitions(t *testing.T) {
	t.Parallel()
	ask, _ := catalog.Lookup("ask_person")
	askFields := ask.Fields
	defs, err := Definitions([]string{"write", "ask_person", "read", "ls", "grep", "edit"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
		if len(d.Description) < 80 {
			t.Errorf("%s: description too thin: %q", d.Name, d.Description)
		}
		var s struct {
			Type                 string                     `json:"type"`
			Properties           map[string]json.RawMessage `json:"properties"`
			Required             []string                   `json:"required"`
			AdditionalProperties *bool                      `json:"additionalProperties"`
		}
		if err := json.Unmarshal(d.Schema, &s); err != nil {
			t.Fatalf("%s: schema: %v", d.Name, err)
		}
		if s.Type != "object" || s.AdditionalProperties == nil || *s.AdditionalProperties || s.Required == nil {
			t.Errorf("%s: schema %s", d.Name, d.Schema)
		}
		for _, r := range s.Required {
			if _, ok := s.Properties[r]; !ok {
				t.Errorf("%s: required %q not a property", d.Name, r)
			}
		}
	}
	if want := []string{"write", "ask_person", "read", "ls", "grep", "edit"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("names %v", names)
	}
	if got := string(AskPerson.Schema); got != `{"type":"object","properties":{"question":{"type":"string","description":"`+askFields[0].Desc+`"},"takeover":{"type":"boolean","description":"`+askFields[1].Desc+`"}},"required":["question"],"additionalProperties":false}` {
		t.Fatalf("ask_person schema %s", got)
	}
	if _, err := Definitions([]string{"read", "bogus"}); err == nil || !strings.Contains(err.Error(), `"bogus"`) {
		t.Fatalf("unknown tool: %v", err)
	}
	if _, err := Definitions([]string{"read", "read"}); err == nil {
		t.Fatal("duplicate accepted")
	}
	if _, ok := Lookup("ask_person"); ok {
		t.Fatal("ask_person is not executed here")
	}
	for _, n := range []string{"read", "ls", "grep"} {
		if tool, _ := Lookup(n); !tool.ReadOnly() {
			t.Errorf("%s not read-only", n)
		}
	}
	for _, n := range []string{"write", "edit"} {
		if tool, _ := Lookup(n); tool.ReadOnly() {
			t.Errorf("%s read-only", n)
		}
	}
}

// Not parallel: it sets environment variables and the dev flag.
func TestDevCount(t *testing.T) {
	EnableDevTools(false)
	t.Cleanup(func() { EnableDevTools(false) })
	t.Setenv("AGENTRUN_DEV_TOOLS", "1") // the old switch: the environment alone enables nothing
	if _, ok := Lookup("dev_count"); ok {
		t.Fatal("dev_count found while disabled")
	}
	if got := Names(); !reflect.DeepEqual(got, []string{"edit", "grep", "ls", "read", "write"}) {
		t.Fatalf("Names() = %v", got)
	}
	if _, err := Definitions([]string{"dev_count"}); err == nil {
		t.Fatal("dev_count defined while disabled")
	}

	count := filepath.Join(t.TempDir(), "count")
	EnableDevTools(true)
	t.Setenv(EnvDevCountFile, count)
	if got := Names(); !reflect.DeepEqual(got, []string{"dev_count", "edit", "grep", "ls", "read", "write"}) {
		t.Fatalf("Names() = %v", got)
	}
	if _, err := Definitions([]string{"dev_count"}); err != nil {
		t.Fatal(err)
	}
	tool, ok := Lookup("dev_count")
	if !ok || tool.ReadOnly() {
		t.Fatal("dev_count missing or read-only")
	}
	root := t.TempDir()
	if got := mustOK(t, call(t, root, "dev_count", M{"label": "a"})); got != "counted a" {
		t.Fatalf("got %q", got)
	}
	start := time.Now()
	mustOK(t, call(t, root, "dev_count", M{"label": "b", "sleep_ms": 50}))
	if time.Since(start) < 50*time.Millisecond {
		t.Fatal("did not sleep")
	}
	mustFail(t, call(t, root, "dev_count", M{"label": "c\nd"}), "single line")
	mustFail(t, call(t, root, "dev_count", M{"label": "c", "sleep_ms": -1}), "sleep_ms")
	mustFail(t, call(t, root, "dev_count", M{}), `"label"`)

	// Cancelled while sleeping: the line is already written, and Run says it was cancelled.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := tool.Run(ctx, Env{Root: root}, json.RawMessage(`{"label":"c","sleep_ms":60000}`)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v", err)
	}
	b, err := os.ReadFile(count)
	if err != nil || string(b) != "a\nb\nc\n" {
		t.Fatalf("count file %q %v", b, err)
	}

	t.Setenv(EnvDevCountFile, "relative")
	if _, err := tool.Run(context.Background(), Env{Root: root}, json.RawMessage(`{"label":"x"}`)); err == nil {
		t.Fatal("relative count file accepted")
	}
}
