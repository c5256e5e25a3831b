package agent

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"agentrun.dev/agentrun/internal/store"
)

// maxSnapshotFile bounds a file saved to the store; bigger files stay on the runner's disk only.
const maxSnapshotFile = 32 << 20

// fileSig is what tells a changed file from an unchanged one without reading it.
type fileSig struct {
	size  int64
	mtime time.Time
	mode  fs.FileMode
}

// folderIndex is the run folder as last saved to the store.
type folderIndex map[string]fileSig

// restoreFolder makes the run folder hold what the store saved for the run (after a takeover the
// folder may be missing or stale on this runner's disk) and returns its index.
func restoreFolder(ctx context.Context, st store.Store, run, dir string) (folderIndex, int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, 0, fmt.Errorf("run folder: %w", err)
	}
	files, err := st.ListFiles(ctx, run)
	if err != nil {
		return nil, 0, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, 0, fmt.Errorf("open run folder: %w", err)
	}
	defer root.Close()
	restored := 0
	for _, f := range files {
		if cur, err := root.ReadFile(f.Path); err == nil && bytes.Equal(cur, f.Content) {
			continue
		}
		if d := filepath.Dir(f.Path); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return nil, 0, fmt.Errorf("restore %s: %w", f.Path, err)
			}
		}
		if err := root.WriteFile(f.Path, f.Content, fs.FileMode(f.Mode)); err != nil {
			return nil, 0, fmt.Errorf("restore %s: %w", f.Path, err)
		}
		restored++
	}
	// The index holds what the store has; files on disk it does not know (an interrupted step's
	// effect) are saved with the next step that changes files.
	onDisk, _, err := folderIndex{}.changes(dir)
	if err != nil {
		return nil, 0, err
	}
	saved := folderIndex{}
	for _, f := range files {
		if sig, ok := onDisk[f.Path]; ok {
			saved[f.Path] = sig
		}
	}
	return saved, restored, nil
}

// changes walks the folder and returns what differs from the index, and the new index.
func (idx folderIndex) changes(dir string) (folderIndex, []store.FileWrite, error) {
	next := folderIndex{}
	var writes []store.FileWrite
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil // directories are implied; symlinks and devices are not saved
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		sig := fileSig{info.Size(), info.ModTime(), info.Mode().Perm()}
		next[rel] = sig
		if old, ok := idx[rel]; ok && old == sig {
			return nil
		}
		if info.Size() > maxSnapshotFile {
			return nil
		}
		content, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		writes = append(writes, store.FileWrite{Path: rel, Content: content, Mode: uint32(sig.mode)})
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("scan run folder: %w", err)
	}
	for p := range idx {
		if _, ok := next[p]; !ok {
			writes = append(writes, store.FileWrite{Path: p, Deleted: true})
		}
	}
	return next, writes, nil
}
