package runfolder

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

const secret = "TOP-SECRET-token-value"

// layout makes a run folder beside a "data" folder holding a secret, the way a run folder sits
// inside the server's data folder.
func layout(t *testing.T) (run, outside string) {
	t.Helper()
	base := t.TempDir()
	outside = filepath.Join(base, "data")
	run = filepath.Join(base, "data", "runs", "r1")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "token"), []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	return run, outside
}

func walkAll(t *testing.T, dir string) map[string]string {
	t.Helper()
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	got := map[string]string{}
	if err := d.Walk(func(f *File) error {
		b, err := f.Read(1 << 20)
		if err != nil {
			return err
		}
		got[f.Path] = string(b)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestWalkSkipsSymlinksFIFOsAndDevices(t *testing.T) {
	run, outside := layout(t)
	os.WriteFile(filepath.Join(run, "a.txt"), []byte("a"), 0o644)
	os.MkdirAll(filepath.Join(run, "sub", "deep"), 0o755)
	os.WriteFile(filepath.Join(run, "sub", "deep", "b.txt"), []byte("b"), 0o600)
	os.Symlink(filepath.Join(outside, "token"), filepath.Join(run, "abs-link"))
	os.Symlink("../../token", filepath.Join(run, "rel-link"))
	os.Symlink("a.txt", filepath.Join(run, "in-root-link")) // even a link inside the folder is not followed
	os.Symlink(outside, filepath.Join(run, "dir-link"))
	if err := unix.Mkfifo(filepath.Join(run, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A character device (as /dev/null): only root can make one; skipped otherwise.
	if err := unix.Mknod(filepath.Join(run, "null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Logf("no device node made (%v): that case is not checked", err)
	}
	got := walkAll(t, run) // a FIFO that blocked would hang here
	want := map[string]string{"a.txt": "a", "sub/deep/b.txt": "b"}
	if len(got) != len(want) {
		t.Fatalf("walk found %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

func TestWalkReportsPermBitsOnlyAndClearsSetuid(t *testing.T) {
	run, _ := layout(t)
	p := filepath.Join(run, "prog")
	os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755)
	if err := os.Chmod(p, 0o755|fs.ModeSetuid|fs.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	d, _ := Open(run)
	defer d.Close()
	var perm fs.FileMode
	d.Walk(func(f *File) error { perm = f.Perm; return nil })
	if perm != 0o755 {
		t.Errorf("perm = %v, want 0755", perm)
	}
	st, _ := os.Stat(p)
	if st.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
		t.Errorf("setuid/setgid still set on disk: %v", st.Mode())
	}
}

// Issue 24: a folder the sandbox made setgid (or sticky) kept the bit in the host's copy. A walk
// clears setuid, setgid and sticky on every directory, the run folder itself included, and on a
// sticky file, leaving the permission bits as they were.
func TestWalkClearsSpecialBitsOnFolders(t *testing.T) {
	run, _ := layout(t)
	for _, dir := range []string{"shared", "shared/deeper", "tmp"} {
		if err := os.Mkdir(filepath.Join(run, dir), 0o750); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(run, dir, "f.txt"), []byte("x"), 0o644)
	}
	sticky := filepath.Join(run, "sticky.txt")
	os.WriteFile(sticky, []byte("x"), 0o640)
	for p, mode := range map[string]fs.FileMode{
		run: 0o755 | fs.ModeSetgid, filepath.Join(run, "shared"): 0o750 | fs.ModeSetgid, filepath.Join(run, "shared/deeper"): 0o750 | fs.ModeSetgid | fs.ModeSetuid,
		filepath.Join(run, "tmp"): 0o750 | fs.ModeSticky, sticky: 0o640 | fs.ModeSticky,
	} {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if st, _ := os.Stat(p); st.Mode()&(fs.ModeSetgid|fs.ModeSetuid|fs.ModeSticky) == 0 {
			t.Fatalf("%s: the bits did not take (%v)", p, st.Mode())
		}
	}
	d, err := Open(run)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	n := 0
	if err := d.Walk(func(f *File) error { n++; return nil }); err != nil || n != 4 {
		t.Fatalf("walk: %d files, %v", n, err)
	}
	for p, perm := range map[string]fs.FileMode{run: 0o755, filepath.Join(run, "shared"): 0o750, filepath.Join(run, "shared/deeper"): 0o750,
		filepath.Join(run, "tmp"): 0o750, sticky: 0o640} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode()&(fs.ModeSetgid|fs.ModeSetuid|fs.ModeSticky) != 0 || st.Mode().Perm() != perm {
			t.Errorf("%s after a walk: %v, want %v and no setuid, setgid or sticky", p, st.Mode(), perm)
		}
	}
}

func TestReadFileNeverFollows(t *testing.T) {
	run, outside := layout(t)
	os.WriteFile(filepath.Join(run, "ok.txt"), []byte("ok"), 0o644)
	os.Symlink(filepath.Join(outside, "token"), filepath.Join(run, "link"))
	os.Symlink(outside, filepath.Join(run, "dirlink"))
	unix.Mkfifo(filepath.Join(run, "fifo"), 0o644)
	d, _ := Open(run)
	defer d.Close()
	if b, err := d.ReadFile("ok.txt", 10); err != nil || string(b) != "ok" {
		t.Fatalf("ok.txt = %q, %v", b, err)
	}
	for _, p := range []string{"link", "dirlink/token", "fifo", "missing"} {
		if b, err := d.ReadFile(p, 100); !errors.Is(err, ErrNotRegular) {
			t.Errorf("ReadFile(%s) = %q, %v; want ErrNotRegular", p, b, err)
		}
	}
	for _, p := range []string{"../token", "/etc/passwd", "a/../../token", ""} {
		if _, err := d.ReadFile(p, 100); err == nil {
			t.Errorf("ReadFile(%q) succeeded", p)
		}
	}
	if _, err := d.ReadFile("ok.txt", 1); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadFile over the limit: %v, want ErrTooLarge", err)
	}
	// The folder itself must not be a symlink.
	alias := filepath.Join(filepath.Dir(run), "alias")
	os.Symlink(run, alias)
	if _, err := Open(alias); err == nil {
		t.Error("Open followed a symlinked run folder")
	}
}

func TestWriteFileReplacesSymlinksNeverWritesThrough(t *testing.T) {
	run, outside := layout(t)
	os.Symlink(filepath.Join(outside, "token"), filepath.Join(run, "f.txt"))
	os.Symlink(outside, filepath.Join(run, "sub"))
	d, _ := Open(run)
	defer d.Close()
	if err := d.WriteFile("f.txt", []byte("restored"), 0o644|fs.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	if err := d.WriteFile("sub/token", []byte("overwritten"), 0o4755); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "token")); string(b) != secret {
		t.Fatalf("the secret outside was written through a symlink: %q", b)
	}
	for p, want := range map[string]string{"f.txt": "restored", "sub/token": "overwritten"} {
		st, err := os.Lstat(filepath.Join(run, p))
		if err != nil || !st.Mode().IsRegular() {
			t.Fatalf("%s after write: %v %v, want a regular file", p, st, err)
		}
		if st.Mode()&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0 {
			t.Errorf("%s mode %v carries special bits", p, st.Mode())
		}
		if b, _ := os.ReadFile(filepath.Join(run, p)); string(b) != want {
			t.Errorf("%s = %q, want %q", p, b, want)
		}
	}
	if st, _ := os.Lstat(filepath.Join(run, "sub")); !st.IsDir() {
		t.Errorf("sub is %v, want a directory in place of the symlink", st.Mode())
	}
	if st, _ := os.Stat(filepath.Join(run, "f.txt")); st.Mode().Perm() != 0o644 {
		t.Errorf("f.txt perm %v, want 0644 (umask must not change it)", st.Mode().Perm())
	}
}

// swapper exchanges two names in a loop (renameat2 RENAME_EXCHANGE, as the audit's program did)
// until stopped.
func swapper(t *testing.T, a, b string) (stop func()) {
	t.Helper()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
				t.Errorf("exchange: %v", err)
				return
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// naiveSees runs the old walk (listing, then a path read that follows links) until it reads the
// secret or gives up: proof that the swapper really races the walker.
func naiveSees(dir string, tries int) bool {
	for i := 0; i < tries; i++ {
		hit := false
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(secret)) {
				hit = true
			}
			return nil
		})
		if hit {
			return true
		}
	}
	return false
}

func TestWalkRacingFileSwap(t *testing.T) {
	run, outside := layout(t)
	decoy := filepath.Join(run, "decoy.txt")
	link := filepath.Join(run, "swap")
	os.WriteFile(decoy, []byte("harmless"), 0o644)
	os.Symlink(filepath.Join(outside, "token"), link)
	stop := swapper(t, decoy, link)
	defer stop()
	if !naiveSees(run, 20000) {
		t.Fatal("the naive walk never read the secret: the swap does not race the walk, so this test proves nothing")
	}
	d, err := Open(run)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	seen := 0
	for i := 0; i < 5000; i++ {
		if err := d.Walk(func(f *File) error {
			b, err := f.Read(1 << 20)
			if errors.Is(err, ErrNotRegular) {
				return nil // swapped between the listing and the open: not read
			}
			if err != nil {
				return err
			}
			if strings.Contains(string(b), secret) {
				t.Fatalf("walk %d read the secret as %s", i, f.Path)
			}
			seen++
			return nil
		}); err != nil {
			t.Fatalf("walk %d: %v", i, err)
		}
	}
	if seen == 0 {
		t.Error("the walk never saw the decoy file")
	}
}

func TestWalkRacingDirectorySwap(t *testing.T) {
	run, outside := layout(t)
	real := filepath.Join(run, "work")
	link := filepath.Join(run, "swapdir")
	os.MkdirAll(real, 0o755)
	os.WriteFile(filepath.Join(real, "token"), []byte("harmless"), 0o644)
	os.Symlink(outside, link) // outside holds "token" with the secret
	stop := swapper(t, real, link)
	defer stop()
	if !naiveSees(run, 20000) {
		t.Fatal("the naive walk never read the secret: the swap does not race the walk")
	}
	d, _ := Open(run)
	defer d.Close()
	for i := 0; i < 5000; i++ {
		if err := d.Walk(func(f *File) error {
			b, err := f.Read(1 << 20)
			if errors.Is(err, ErrNotRegular) {
				return nil // swapped between the listing and the open: not read
			}
			if err != nil {
				return err
			}
			if strings.Contains(string(b), secret) || strings.HasPrefix(f.Path, "swapdir/runs") {
				t.Fatalf("walk %d reached outside the folder: %s", i, f.Path)
			}
			return nil
		}); err != nil {
			t.Fatalf("walk %d: %v", i, err)
		}
	}
}

// A file swapped for a FIFO or a link after the listing (inside fn, before Read) is not read, and
// the FIFO does not block the read.
func TestReadAfterSwapIsRefused(t *testing.T) {
	run, outside := layout(t)
	for _, kind := range []string{"fifo", "link"} {
		t.Run(kind, func(t *testing.T) {
			p := filepath.Join(run, "f-"+kind)
			os.WriteFile(p, []byte("plain"), 0o644)
			d, _ := Open(run)
			defer d.Close()
			calls := 0
			err := d.Walk(func(f *File) error {
				if f.Path != "f-"+kind {
					return nil
				}
				calls++
				tmp := filepath.Join(run, "tmp-"+kind)
				if kind == "fifo" {
					unix.Mkfifo(tmp, 0o644)
				} else {
					os.Symlink(filepath.Join(outside, "token"), tmp)
				}
				if err := os.Rename(tmp, p); err != nil {
					t.Fatal(err)
				}
				b, err := f.Read(100)
				if !errors.Is(err, ErrNotRegular) {
					t.Errorf("Read after the swap = %q, %v; want ErrNotRegular", b, err)
				}
				return nil
			})
			if err != nil || calls != 1 {
				t.Fatalf("walk: %v, %d calls", err, calls)
			}
			os.Remove(p)
		})
	}
}
