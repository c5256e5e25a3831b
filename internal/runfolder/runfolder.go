// Package runfolder is how the host reads and writes a run folder: a folder that code the agent runs
// (in a sandbox) can change at any moment, while the host walks it. Nothing here follows a symbolic
// link, not even one that stays inside the folder: every entry is opened relative to its parent
// directory's descriptor with O_NOFOLLOW, the opened descriptor is checked with fstat, and only a
// regular file is read (a bounded number of bytes) and only a directory is descended into. A
// symlink, FIFO, socket or device swapped in between the listing and the open is skipped, so no
// path the agent can make leads the host to a file outside the folder (the data folder's token, keys
// and database are outside it) or blocks it on a FIFO.
package runfolder

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// MaxDepth bounds how deep Walk descends (each level holds one descriptor open); deeper folders
// are not walked.
const MaxDepth = 64

// ErrTooLarge is returned by File.Read when the file holds more than the limit (it may have grown
// since it was listed).
var ErrTooLarge = errors.New("file is larger than the limit")

// ErrNotRegular is returned by ReadFile for a path that is not a regular file reached without a
// symlink (a directory, a symlink, a FIFO, a device, or missing parents).
var ErrNotRegular = errors.New("not a regular file in the run folder")

// Dir is an open run folder.
type Dir struct {
	fd   int
	path string
}

// Open opens dir, which must be a directory and not itself a symlink.
func Open(dir string) (*Dir, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open run folder", Path: dir, Err: err}
	}
	return &Dir{fd: fd, path: dir}, nil
}

// Close releases the folder's descriptor.
func (d *Dir) Close() error { return unix.Close(d.fd) }

// File is a regular file found by Walk. Its fields come from the listing (fstatat, no link
// followed); Read opens it only then, again with no link followed, and reads it only if the opened
// descriptor is a regular file.
type File struct {
	Path    string // slash-separated, relative to the folder
	Size    int64
	ModTime time.Time
	Perm    fs.FileMode // permission bits only: setuid, setgid and sticky are never reported
	dirfd   int
	name    string
}

// Read returns the file's content, at most limit bytes: ErrTooLarge if it holds more, ErrNotRegular
// if it is no longer a regular file (swapped for a link, a FIFO... since the listing, or removed).
// It is valid only while Walk's fn runs.
func (f *File) Read(limit int64) ([]byte, error) {
	fh, err := openRegular(f.dirfd, f.name)
	if err != nil {
		if errors.Is(err, ErrNotRegular) {
			return nil, fmt.Errorf("%s: %w", f.Path, err)
		}
		return nil, fmt.Errorf("read %s: %w", f.Path, err)
	}
	defer fh.Close()
	return readLimited(fh, limit)
}

// openRegular opens name in dirfd with no link followed and returns it only if the descriptor is a
// regular file (ErrNotRegular otherwise, or when the entry is gone or swapped).
func openRegular(dirfd int, name string) (*os.File, error) {
	// O_NONBLOCK: a FIFO swapped in opens at once instead of waiting for a writer; O_NOCTTY: a
	// terminal never becomes the server's.
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		if swapped(err) {
			return nil, ErrNotRegular
		}
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, ErrNotRegular
	}
	return os.NewFile(uintptr(fd), name), nil
}

func readLimited(f *os.File, limit int64) ([]byte, error) {
	// limit+1: a file can grow between its fstat and this read.
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, ErrTooLarge
	}
	return b, nil
}

// Walk calls fn for every regular file under the folder, in lexical order of paths per directory.
// Symlinks, FIFOs, sockets and devices are skipped; an entry that changes type between the listing
// and File.Read is not read. Files are opened only to be read, so a walk over unchanged files costs
// little more than a listing. A regular file or a directory (the folder itself included) carrying
// setuid, setgid or sticky bits has them cleared on disk (by its descriptor), so a sandbox cannot
// leave a setuid program or a setgid folder in the host's folder.
func (d *Dir) Walk(fn func(*File) error) error {
	// A fresh open of ".", not a dup: each walk has its own directory offset.
	fd, err := unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("walk %s: %w", d.path, err)
	}
	clearSpecialDir(fd)
	return walk(fd, d.path, "", 0, fn)
}

// special are the setuid, setgid and sticky bits.
const special = unix.S_ISUID | unix.S_ISGID | unix.S_ISVTX

// clearSpecialDir clears the setuid, setgid and sticky bits of the directory open at fd (through
// the descriptor, never a path): a setgid folder the sandbox made would give every file the host
// writes into it the folder's group, and a sticky one would stop the host replacing others'
// files. A directory whose bits cannot be cleared is still walked.
func clearSpecialDir(fd int) {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Mode&special != 0 {
		_ = unix.Fchmod(fd, st.Mode&0o777)
	}
}

// walk lists the directory open at dirfd (and closes it) and visits its entries.
func walk(dirfd int, base, prefix string, depth int, fn func(*File) error) error {
	dir := os.NewFile(uintptr(dirfd), base+"/"+prefix)
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("list %s: %w", dir.Name(), err)
	}
	sort.Strings(names)
	for _, name := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue // removed since the listing
			}
			return fmt.Errorf("stat %s: %w", base+"/"+prefix+name, err)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			if depth+1 >= MaxDepth {
				continue
			}
			cfd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				if swapped(err) {
					continue
				}
				return fmt.Errorf("open %s: %w", base+"/"+prefix+name, err)
			}
			clearSpecialDir(cfd)
			if err := walk(cfd, base, prefix+name+"/", depth+1, fn); err != nil {
				return err
			}
		case unix.S_IFREG:
			if err := visitFile(dirfd, base, prefix, name, &st, fn); err != nil {
				return err
			}
		}
		// Symlinks, FIFOs, sockets and devices are not part of a snapshot.
	}
	return nil
}

func visitFile(dirfd int, base, prefix, name string, st *unix.Stat_t, fn func(*File) error) error {
	if st.Mode&special != 0 {
		// Cleared through a descriptor that is this regular file, never a path. A file whose bits
		// cannot be cleared is left out of the snapshot.
		f, err := openRegular(dirfd, name)
		if err != nil {
			return nil
		}
		err = unix.Fchmod(int(f.Fd()), st.Mode&0o777)
		f.Close()
		if err != nil {
			return nil
		}
	}
	return fn(&File{
		Path:    prefix + name,
		Size:    st.Size,
		ModTime: time.Unix(st.Mtim.Sec, st.Mtim.Nsec),
		Perm:    fs.FileMode(st.Mode & 0o777),
		dirfd:   dirfd,
		name:    name,
	})
}

// swapped reports an open that failed because the entry is no longer what the listing said: gone,
// a symlink now (ELOOP), not a directory now, or a socket (ENXIO). EACCES too: a file the agent made
// unreadable is left out rather than failing the whole walk.
func swapped(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) ||
		errors.Is(err, unix.ENXIO) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)
}

// splitPath checks a slash-separated relative path and returns its components.
func splitPath(rel string) ([]string, error) {
	if rel == "" || strings.HasPrefix(rel, "/") || strings.ContainsRune(rel, 0) {
		return nil, fmt.Errorf("run folder path %q: want a relative path", rel)
	}
	parts := strings.Split(rel, "/")
	for _, p := range parts {
		if p == "" || p == "." || p == ".." {
			return nil, fmt.Errorf("run folder path %q: empty, . or .. component", rel)
		}
	}
	return parts, nil
}

// openParent opens the directory holding rel's last component, walking each component with
// O_NOFOLLOW. With create, missing directories are made, and a symlink or file standing where a
// directory belongs is replaced by a directory (never followed).
func (d *Dir) openParent(parts []string, create bool) (int, error) {
	fd, err := unix.Dup(d.fd)
	if err != nil {
		return -1, err
	}
	unix.CloseOnExec(fd)
	for _, p := range parts[:len(parts)-1] {
		next, err := unix.Openat(fd, p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil && create {
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
				err = unix.Unlinkat(fd, p, 0)
			} else if errors.Is(err, unix.ENOENT) {
				err = nil
			}
			if err == nil {
				if err = unix.Mkdirat(fd, p, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
					next, err = unix.Openat(fd, p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				}
			}
		}
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// ReadFile reads the regular file at rel (slash-separated) without following any symlink on the
// way, at most limit bytes (ErrTooLarge past it). A path that is not a regular file is ErrNotRegular.
func (d *Dir) ReadFile(rel string, limit int64) ([]byte, error) {
	parts, err := splitPath(rel)
	if err != nil {
		return nil, err
	}
	pfd, err := d.openParent(parts, false)
	if err != nil {
		if swapped(err) {
			return nil, fmt.Errorf("%s: %w", rel, ErrNotRegular)
		}
		return nil, fmt.Errorf("read %s: %w", rel, err)
	}
	defer unix.Close(pfd)
	f, err := openRegular(pfd, parts[len(parts)-1])
	if err != nil {
		if errors.Is(err, ErrNotRegular) {
			return nil, fmt.Errorf("%s: %w", rel, err)
		}
		return nil, fmt.Errorf("read %s: %w", rel, err)
	}
	defer f.Close()
	return readLimited(f, limit)
}

// Size returns the size of the regular file at rel, reached as ReadFile reaches it (no symlink
// followed on the way; ErrNotRegular when it is not a regular file).
func (d *Dir) Size(rel string) (int64, error) {
	parts, err := splitPath(rel)
	if err != nil {
		return 0, err
	}
	pfd, err := d.openParent(parts, false)
	if err != nil {
		if swapped(err) {
			return 0, fmt.Errorf("%s: %w", rel, ErrNotRegular)
		}
		return 0, fmt.Errorf("stat %s: %w", rel, err)
	}
	defer unix.Close(pfd)
	f, err := openRegular(pfd, parts[len(parts)-1])
	if err != nil {
		if errors.Is(err, ErrNotRegular) {
			return 0, fmt.Errorf("%s: %w", rel, err)
		}
		return 0, fmt.Errorf("stat %s: %w", rel, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat %s: %w", rel, err)
	}
	return st.Size(), nil
}

// WriteFile makes rel hold data with permission bits perm&0777 (setuid, setgid and sticky are never
// set). It writes a new file beside it and renames it into place, so a symlink standing at rel is
// replaced, never written through, and a reader never sees half a file. Missing directories are
// made; a symlink where a directory belongs is replaced by a directory.
func (d *Dir) WriteFile(rel string, data []byte, perm fs.FileMode) error {
	parts, err := splitPath(rel)
	if err != nil {
		return err
	}
	pfd, err := d.openParent(parts, true)
	if err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	defer unix.Close(pfd)
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := ".agentrun-write-" + hex.EncodeToString(rnd[:])
	tfd, err := unix.Openat(pfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	f := os.NewFile(uintptr(tfd), rel)
	_, err = f.Write(data)
	if err == nil {
		// Fchmod, not the open's mode: the umask must not change what the store saved.
		err = unix.Fchmod(tfd, uint32(perm&0o777))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(pfd, tmp, pfd, parts[len(parts)-1])
	}
	if err != nil {
		unix.Unlinkat(pfd, tmp, 0)
		return fmt.Errorf("write %s: %w", rel, err)
	}
	return nil
}

// Remove removes the entry at rel (a file, or a symlink itself: never what it points to),
// reached without following any symlink on the way; one already gone is not an error.
func (d *Dir) Remove(rel string) error {
	parts, err := splitPath(rel)
	if err != nil {
		return err
	}
	pfd, err := d.openParent(parts, false)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("remove %s: %w", rel, err)
	}
	defer unix.Close(pfd)
	if err := unix.Unlinkat(pfd, parts[len(parts)-1], 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove %s: %w", rel, err)
	}
	return nil
}

// Path is run's folder on this host, under the data folder: where the runner keeps it and the
// server removes it when the run is deleted.
func Path(dataDir, run string) string { return filepath.Join(dataDir, "runs", run) }
