// Package learning is a learning agent's folder (docs/architecture.md, "Groups, triggers and
// learning"): a git repository with one branch, main, whose objects and main live in the store,
// read and written with go-git in memory, so every runner starts from the same main without a
// shared disk or a git binary. It also holds the rules a run's proposal must pass (check.go) before
// a grader judges it.
package learning

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// Repo is one agent's repository as the store had it when Open read it.
type Repo struct {
	st    store.Learning
	agent string
	mem   *memory.Storage
	// Main is the commit main named when the repository was read (zero: no commit yet).
	Main plumbing.Hash
	// stored are the objects already in the store.
	stored map[plumbing.Hash]bool
}

// Open reads agent's repository from the store.
func Open(ctx context.Context, st store.Learning, agent string) (*Repo, error) {
	main, err := st.LearningMain(ctx, agent)
	if err != nil {
		return nil, err
	}
	objs, err := st.LearningObjects(ctx, agent)
	if err != nil {
		return nil, err
	}
	r := &Repo{st: st, agent: agent, mem: memory.NewStorage(), stored: map[plumbing.Hash]bool{}}
	for _, o := range objs {
		eo := r.mem.NewEncodedObject()
		eo.SetType(plumbing.ObjectType(o.Type))
		eo.SetSize(int64(len(o.Data)))
		w, err := eo.Writer()
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(o.Data); err != nil {
			return nil, err
		}
		_ = w.Close()
		h, err := r.mem.SetEncodedObject(eo)
		if err != nil {
			return nil, err
		}
		if h.String() != o.Hash {
			return nil, fmt.Errorf("learning folder of %s: object %s hashes to %s", agent, o.Hash, h)
		}
		r.stored[h] = true
	}
	if main != "" {
		r.Main = plumbing.NewHash(main)
		if _, err := object.GetCommit(r.mem, r.Main); err != nil {
			return nil, fmt.Errorf("learning folder of %s: main %s: %w", agent, main, err)
		}
	}
	return r, nil
}

// File is one file of a commit: its path in the folder, its blob hash (the ETag) and content.
type File struct {
	Path    string `json:"path"`
	ETag    string `json:"etag"`
	Content string `json:"content,omitempty"`
}

// Files returns the files of commit (zero: none), ordered by path. It walks the trees itself
// rather than with go-git's file iterator, which fails the whole listing on a name it finds
// unsafe (a newline, a control character): a commit that stored such a path (before the paths
// were checked, or written by another tool) must still list, so that it can be retired. Callers
// that offer files to a run keep only the valid ones (Usable).
func (r *Repo) Files(commit plumbing.Hash) ([]File, error) {
	if commit.IsZero() {
		return nil, nil
	}
	c, err := object.GetCommit(r.mem, commit)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", commit, err)
	}
	var out []File
	var walk func(h plumbing.Hash, dir string, depth int) error
	walk = func(h plumbing.Hash, dir string, depth int) error {
		if depth > maxTreeDepth {
			return fmt.Errorf("commit %s: its trees nest deeper than %d", commit, maxTreeDepth)
		}
		t, err := object.GetTree(r.mem, h)
		if err != nil {
			return fmt.Errorf("commit %s: tree %s: %w", commit, h, err)
		}
		for _, e := range t.Entries {
			p := dir + e.Name
			switch {
			case e.Mode == filemode.Dir:
				if err := walk(e.Hash, p+"/", depth+1); err != nil {
					return err
				}
			case e.Mode == filemode.Submodule:
				// Not a file of the folder: nothing here writes one.
			default:
				b, err := object.GetBlob(r.mem, e.Hash)
				if err != nil {
					return fmt.Errorf("commit %s: %q: %w", commit, p, err)
				}
				rd, err := b.Reader()
				if err != nil {
					return err
				}
				data, err := io.ReadAll(rd)
				rd.Close()
				if err != nil {
					return err
				}
				out = append(out, File{Path: p, ETag: e.Hash.String(), Content: string(data)})
			}
		}
		return nil
	}
	if err := walk(c.TreeHash, "", 0); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// maxTreeDepth bounds how deep Files follows trees (a valid path has at most maxSegments parts).
const maxTreeDepth = 64

// Usable is files without those whose path is not a valid one of the folder (PathProblem), with
// why each was left out: what a run is offered from a commit.
func Usable(files []File) (ok []File, left []string) {
	for _, f := range files {
		if why := PathProblem(f.Path); why != "" {
			left = append(left, fmt.Sprintf("%q: %s", f.Path, why))
			continue
		}
		ok = append(ok, f)
	}
	return ok, left
}

// MinCommitPrefix is the fewest hex digits that name a commit: the log and the console show 12,
// git's short form is 7.
const MinCommitPrefix = 7

// Why ResolveCommit refused a commit's name.
var (
	ErrCommitName      = errors.New("not a commit's hash")
	ErrUnknownCommit   = errors.New("no such commit")
	ErrAmbiguousCommit = errors.New("ambiguous commit")
)

// ResolveCommit finds the commit that ref names: its whole 40-digit hash or a prefix of at least
// MinCommitPrefix hex digits that only one commit of the folder starts with.
func (r *Repo) ResolveCommit(ref string) (plumbing.Hash, error) {
	ref = strings.ToLower(ref)
	if len(ref) < MinCommitPrefix || len(ref) > 40 || strings.Trim(ref, "0123456789abcdef") != "" {
		return plumbing.ZeroHash, fmt.Errorf("%w: %q is not %d to 40 hex digits of a commit's hash", ErrCommitName, ref, MinCommitPrefix)
	}
	it, err := r.mem.IterEncodedObjects(plumbing.CommitObject)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	var found []plumbing.Hash
	err = it.ForEach(func(o plumbing.EncodedObject) error {
		if strings.HasPrefix(o.Hash().String(), ref) {
			found = append(found, o.Hash())
		}
		return nil
	})
	if err != nil {
		return plumbing.ZeroHash, err
	}
	switch len(found) {
	case 0:
		return plumbing.ZeroHash, fmt.Errorf("%w: commit %s is not in the learning folder", ErrUnknownCommit, ref)
	case 1:
		return found[0], nil
	}
	sort.Slice(found, func(i, j int) bool { return found[i].String() < found[j].String() })
	names := make([]string, len(found))
	for i, h := range found {
		names[i] = h.String()
	}
	return plumbing.ZeroHash, fmt.Errorf("%w: %s is the start of %d commits (%s); give more of its digits", ErrAmbiguousCommit, ref, len(found), strings.Join(names, ", "))
}

// Commit is one entry of the log.
type Commit = api.LearningCommit

// Log returns main's history, newest first.
func (r *Repo) Log() ([]Commit, error) {
	var out []Commit
	for h := r.Main; !h.IsZero(); {
		c, err := object.GetCommit(r.mem, h)
		if err != nil {
			return nil, err
		}
		out = append(out, Commit{Hash: c.Hash.String(), Author: c.Author.Name, When: c.Author.When.UTC(), Message: c.Message})
		h = plumbing.ZeroHash
		if len(c.ParentHashes) > 0 {
			h = c.ParentHashes[0]
		}
	}
	return out, nil
}

// Change sets a file's content, or removes it (Delete).
type Change struct {
	Path    string
	Content string
	Delete  bool
}

// ErrBadPath: a change writes a file at a path the folder does not allow (PathProblem).
var ErrBadPath = errors.New("not a path of the learning folder:")

// ErrNoChange: the changes leave main's tree as it is, so no commit is made.
var ErrNoChange = errors.New("nothing changes")

// Commit makes a commit on top of r.Main with changes and moves the store's main to it, in one
// store transaction. When another commit moved main since Open, the error wraps
// store.ErrConflict: the caller opens the repository again and re-checks its changes.
func (r *Repo) Commit(ctx context.Context, changes []Change, author, message string, when time.Time) (plumbing.Hash, error) {
	files := map[string]string{}
	cur, err := r.Files(r.Main)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	for _, f := range cur {
		files[f.Path] = f.Content
	}
	for _, c := range changes {
		if c.Delete {
			// A path already stored is removed whatever it is: that is how a bad one goes.
			delete(files, c.Path)
			continue
		}
		if why := PathProblem(c.Path); why != "" {
			return plumbing.ZeroHash, fmt.Errorf("%w %q: %s", ErrBadPath, c.Path, why)
		}
		files[c.Path] = c.Content
	}
	root, err := r.writeTree(files)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if !r.Main.IsZero() {
		c, err := object.GetCommit(r.mem, r.Main)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if c.TreeHash == root {
			return r.Main, ErrNoChange
		}
	}
	sig := object.Signature{Name: author, Email: author + "@agents.agentrun.invalid", When: when.UTC().Truncate(time.Second)}
	c := &object.Commit{Author: sig, Committer: sig, Message: message, TreeHash: root}
	if !r.Main.IsZero() {
		c.ParentHashes = []plumbing.Hash{r.Main}
	}
	h, err := r.put(c)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	var objs []store.GitObject
	for oh, o := range r.mem.ObjectStorage.Objects {
		if r.stored[oh] {
			continue
		}
		rd, err := o.Reader()
		if err != nil {
			return plumbing.ZeroHash, err
		}
		data, err := io.ReadAll(rd)
		rd.Close()
		if err != nil {
			return plumbing.ZeroHash, err
		}
		objs = append(objs, store.GitObject{Hash: oh.String(), Type: int(o.Type()), Data: data})
	}
	old := ""
	if !r.Main.IsZero() {
		old = r.Main.String()
	}
	if err := r.st.UpdateLearningMain(ctx, r.agent, objs, old, h.String()); err != nil {
		return plumbing.ZeroHash, err
	}
	for _, o := range objs {
		r.stored[plumbing.NewHash(o.Hash)] = true
	}
	r.Main = h
	return h, nil
}

type encoder interface {
	Encode(plumbing.EncodedObject) error
}

func (r *Repo) put(o encoder) (plumbing.Hash, error) {
	eo := r.mem.NewEncodedObject()
	if err := o.Encode(eo); err != nil {
		return plumbing.ZeroHash, err
	}
	return r.mem.SetEncodedObject(eo)
}

// writeTree stores the blobs and trees of files and returns the root tree's hash.
func (r *Repo) writeTree(files map[string]string) (plumbing.Hash, error) {
	type dir struct {
		files map[string]plumbing.Hash
		dirs  map[string]*dir
	}
	newDir := func() *dir { return &dir{files: map[string]plumbing.Hash{}, dirs: map[string]*dir{}} }
	root := newDir()
	for p, content := range files {
		eo := r.mem.NewEncodedObject()
		eo.SetType(plumbing.BlobObject)
		w, err := eo.Writer()
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if _, err := io.WriteString(w, content); err != nil {
			return plumbing.ZeroHash, err
		}
		_ = w.Close()
		bh, err := r.mem.SetEncodedObject(eo)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		parts := strings.Split(p, "/")
		d := root
		for _, part := range parts[:len(parts)-1] {
			if d.dirs[part] == nil {
				d.dirs[part] = newDir()
			}
			d = d.dirs[part]
		}
		d.files[parts[len(parts)-1]] = bh
	}
	var write func(d *dir) (plumbing.Hash, error)
	write = func(d *dir) (plumbing.Hash, error) {
		var t object.Tree
		for name, h := range d.files {
			t.Entries = append(t.Entries, object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: h})
		}
		for name, sub := range d.dirs {
			h, err := write(sub)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			t.Entries = append(t.Entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h})
		}
		// git orders a tree's entries by name, a directory's name read as if it ended in "/".
		key := func(e object.TreeEntry) string {
			if e.Mode == filemode.Dir {
				return e.Name + "/"
			}
			return e.Name
		}
		sort.Slice(t.Entries, func(i, j int) bool { return key(t.Entries[i]) < key(t.Entries[j]) })
		return r.put(&t)
	}
	return write(root)
}

// WriteBundle writes main as a git bundle (v2: a header naming main and HEAD, then a packfile of
// every object main reaches), which `git clone FILE` reads.
func (r *Repo) WriteBundle(w io.Writer) error {
	if r.Main.IsZero() {
		return fmt.Errorf("learning folder of %s has no commit yet", r.agent)
	}
	hashes, err := r.reachable()
	if err != nil {
		return err
	}
	var hdr bytes.Buffer
	fmt.Fprintf(&hdr, "# v2 git bundle\n%s HEAD\n%s refs/heads/main\n\n", r.Main, r.Main)
	if _, err := w.Write(hdr.Bytes()); err != nil {
		return err
	}
	_, err = packfile.NewEncoder(w, r.mem, false).Encode(hashes, 10)
	return err
}

// reachable lists every object main reaches: its commits, their trees and blobs.
func (r *Repo) reachable() ([]plumbing.Hash, error) {
	seen := map[plumbing.Hash]bool{}
	var out []plumbing.Hash
	add := func(h plumbing.Hash) bool {
		if seen[h] {
			return false
		}
		seen[h] = true
		out = append(out, h)
		return true
	}
	var walkTree func(h plumbing.Hash) error
	walkTree = func(h plumbing.Hash) error {
		if !add(h) {
			return nil
		}
		t, err := object.GetTree(r.mem, h)
		if err != nil {
			return err
		}
		for _, e := range t.Entries {
			if e.Mode == filemode.Dir {
				if err := walkTree(e.Hash); err != nil {
					return err
				}
			} else {
				add(e.Hash)
			}
		}
		return nil
	}
	for h := r.Main; !h.IsZero(); {
		c, err := object.GetCommit(r.mem, h)
		if err != nil {
			return nil, err
		}
		add(h)
		if err := walkTree(c.TreeHash); err != nil {
			return nil, err
		}
		h = plumbing.ZeroHash
		if len(c.ParentHashes) > 0 {
			h = c.ParentHashes[0]
		}
	}
	return out, nil
}

// The folder's paths, as the learning format has them: notes/NAME.md, skills/NAME/FILE...,
// workflows/NAME.json (or .yaml). Each part is from POSIX's portable filename character set
// (letters, digits, '.', '_', '-'), starts with a letter, digit or '_', and is at most
// maxSegment bytes; a path has at most maxSegments parts and maxPathLen bytes. A path becomes a
// file name on a harness's disk, a line of the notes index in a run's instructions and part of
// a commit message, so nothing in it may be a newline, a NUL, a space or other separator.
const (
	maxPathLen  = 255
	maxSegment  = 100
	maxSegments = 8
)

// ValidPath reports whether p is a clean relative path inside the folder, under one of its three
// parts (notes/, skills/, workflows/), in the characters and lengths the format allows.
func ValidPath(p string) bool { return PathProblem(p) == "" }

// PathProblem says what is wrong with p as a path of the folder ("" when nothing is).
func PathProblem(p string) string {
	switch {
	case p == "":
		return "the path is empty"
	case len(p) > maxPathLen:
		return fmt.Sprintf("the path is %d bytes, over the %d-byte limit", len(p), maxPathLen)
	case strings.HasPrefix(p, "/"):
		return "the path is absolute; it is relative to the learning folder"
	}
	parts := strings.Split(p, "/")
	if len(parts) > maxSegments {
		return fmt.Sprintf("the path has %d parts, over the limit of %d", len(parts), maxSegments)
	}
	for _, part := range parts {
		if part == "" || part == "." || part == ".." {
			return fmt.Sprintf("the path is not clean (it has a part %q)", part)
		}
		if len(part) > maxSegment {
			return fmt.Sprintf("a part of the path is %d bytes, over the %d-byte limit", len(part), maxSegment)
		}
		for i, c := range []byte(part) {
			ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || (i > 0 && (c == '.' || c == '-'))
			if !ok {
				if i == 0 && (c == '.' || c == '-') {
					return fmt.Sprintf("a part of the path starts with %q; each starts with a letter, digit or '_'", c)
				}
				return fmt.Sprintf("the path holds %s; a path holds only letters, digits, '.', '_', '-' and '/'", describeByte(part, i))
			}
		}
	}
	if top := parts[0]; len(parts) < 2 || (top != "notes" && top != "skills" && top != "workflows") {
		return "the path is not under notes/, skills/ or workflows/"
	}
	return ""
}

// describeByte names the character of s at byte i for an error (never the rest of the path).
func describeByte(s string, i int) string {
	c := s[i]
	switch {
	case c == '\n':
		return "a newline"
	case c == 0:
		return "a NUL byte"
	case c < 0x20 || c == 0x7f:
		return fmt.Sprintf("a control character (0x%02x)", c)
	case c == ' ':
		return "a space"
	case c >= 0x80:
		return "a character outside ASCII"
	}
	return fmt.Sprintf("%q", c)
}
