package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"agentrun.dev/agentrun/internal/runfolder"
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
// folder may be missing or stale on this runner's disk) and returns its index. Every read and
// write goes through runfolder: the folder is the agent's to change, so no symlink in it is
// followed (a symlink where a saved file belongs is replaced, never written through).
func restoreFolder(ctx context.Context, st store.Store, run, dir string) (folderIndex, int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, 0, fmt.Errorf("run folder: %w", err)
	}
	files, err := st.ListFiles(ctx, run)
	if err != nil {
		return nil, 0, err
	}
	root, err := runfolder.Open(dir)
	if err != nil {
		return nil, 0, err
	}
	defer root.Close()
	restored := 0
	for _, f := range files {
		if cur, err := root.ReadFile(f.Path, int64(len(f.Content))); err == nil && bytes.Equal(cur, f.Content) {
			continue
		}
		// Permission bits only: a saved mode never makes a setuid, setgid or sticky file.
		if err := root.WriteFile(f.Path, f.Content, fs.FileMode(f.Mode)&fs.ModePerm); err != nil {
			return nil, 0, fmt.Errorf("restore %s: %w", f.Path, err)
		}
		restored++
	}
	// The index holds what the store has; files on disk it does not know (an interrupted step's
	// effect) are saved with the next step that changes files, or when the run parks to be resolved.
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

// changes walks the folder and returns what differs from the index, and the new index. The walk
// follows no symlink and reads only regular files, by descriptor (runfolder.Walk), so an agent
// swapping a file or directory for a link cannot make the host read anything outside the folder.
func (idx folderIndex) changes(dir string) (folderIndex, []store.FileWrite, error) {
	root, err := runfolder.Open(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("scan run folder: %w", err)
	}
	defer root.Close()
	next := folderIndex{}
	var writes []store.FileWrite
	err = root.Walk(func(f *runfolder.File) error {
		sig := fileSig{f.Size, f.ModTime, f.Perm}
		next[f.Path] = sig
		if old, ok := idx[f.Path]; ok && old == sig {
			return nil
		}
		if f.Size > maxSnapshotFile {
			return nil
		}
		content, err := f.Read(maxSnapshotFile)
		if errors.Is(err, runfolder.ErrTooLarge) {
			return nil // grew past the bound since it was listed: it stays on this disk only
		}
		if errors.Is(err, runfolder.ErrNotRegular) {
			// Swapped or removed since the listing: keep what the store has, and look again next time.
			if old, ok := idx[f.Path]; ok {
				next[f.Path] = old
			} else {
				delete(next, f.Path)
			}
			return nil
		}
		if err != nil {
			return err
		}
		writes = append(writes, store.FileWrite{Path: f.Path, Content: content, Mode: uint32(sig.mode)})
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

// parkWithFolder parks the run (as park does) and saves the run folder as this runner's disk holds
// it in the same write: a step cut off by a crash may have written files no completed step saved,
// and the person resolving it inspects them through read-file and the console, which read the
// store. A folder that cannot be scanned does not keep the run from parking.
func (d *drive) parkWithFolder(ctx context.Context) error {
	files, err := d.folderChanges()
	if err != nil {
		d.log.Warn("run folder not saved before parking for resolution", "err", err)
		files = nil
	}
	if _, err := d.j.CommitFiles(ctx, &d.status, true, d.status.Deadline, files); err != nil {
		return err
	}
	d.parked = true
	return errParked
}
