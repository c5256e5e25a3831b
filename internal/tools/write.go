package tools

import (
	"agentrun.dev/agentrun/internal/catalog"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
)

// maxWrite bounds the content of one write, and the size of a file edit
// will work on.
const maxWrite = 10 << 20

func writeRun(ctx context.Context, root *os.Root, in *catalog.Write) (string, error) {
	display, content := in.Path, in.Content
	if len(content) > maxWrite {
		return "", agentErrorf("content is %d bytes; write is limited to 10 MiB (%d bytes)", len(content), maxWrite)
	}
	p, err := agentPath(root, display)
	if err != nil {
		return "", err
	}
	if err := writeFile(ctx, root, display, p, []byte(content)); err != nil {
		return "", err
	}
	return fmt.Sprintf("wrote %d bytes to %s", len(content), display), nil
}

// writeFile replaces the file p (a resolved path, see resolve) with data
// atomically: it writes a temporary file in the same folder and renames it
// over p, all through the root, so no reader sees half a file. An existing
// file keeps its permissions. It does not fsync: the run folder is a cache of
// what the store holds (the step's result commit saves the folder's changes,
// and a runner restores the folder from the store before it drives a run),
// so the write is durable when its step is, and two fsyncs per write cost a
// runner more CPU and latency than the write itself.
func writeFile(ctx context.Context, root *os.Root, display, p string, data []byte) error {
	if p == "." {
		return agentErrorf("%q is the run folder itself, not a file", display)
	}
	perm := fs.FileMode(0o644)
	fi, err := root.Lstat(p)
	switch {
	case err == nil && fi.IsDir():
		return agentErrorf("%q is a directory", display)
	case err == nil && fi.Mode().IsRegular():
		perm = fi.Mode().Perm()
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return pathErr(display, err)
	}
	dir, base := path.Dir(p), path.Base(p)
	if dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return pathErr(display, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := path.Join(dir, "."+base+".tmp-"+hex.EncodeToString(rnd[:]))
	if len(base) > 200 {
		tmp = path.Join(dir, ".agentrun-write.tmp-"+hex.EncodeToString(rnd[:]))
	}
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return pathErr(display, err)
	}
	done := false
	defer func() {
		if !done {
			f.Close()
			root.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", display, err)
	}
	if err := f.Chmod(perm); err != nil { // undo the umask for an existing file's mode
		return fmt.Errorf("write %s: %w", display, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", display, err)
	}
	if err := root.Rename(tmp, p); err != nil {
		root.Remove(tmp)
		done = true
		return pathErr(display, err)
	}
	done = true
	return nil
}
