package storetest

import (
	"bytes"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/store"
)

func testFiles(t *testing.T, open opener) {
	t.Run("SavedWithCommitAndListed", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		l := mustClaim(t, s, newOwner("r"), "run-1", longTTL)
		mustCommit(t, s, l, store.Write{Files: []store.FileWrite{
			{Path: "b/notes.md", Content: []byte("# notes\n"), Mode: 0o644},
			{Path: "a.bin", Content: []byte{0, 1, 2, 255}, Mode: 0o755},
			{Path: "empty.txt", Content: nil, Mode: 0o600},
		}})
		files, err := s.ListFiles(bg, "run-1")
		if err != nil {
			t.Fatalf("ListFiles: %v", err)
		}
		var paths []string
		for _, f := range files {
			paths = append(paths, f.Path)
		}
		if js(paths) != `["a.bin","b/notes.md","empty.txt"]` {
			t.Fatalf("ListFiles paths = %v, want ordered by path", paths)
		}
		if !bytes.Equal(files[0].Content, []byte{0, 1, 2, 255}) || files[0].Mode != 0o755 || files[0].Size != 4 {
			t.Errorf("a.bin = %v mode %o size %d", files[0].Content, files[0].Mode, files[0].Size)
		}
		if files[2].Size != 0 || len(files[2].Content) != 0 {
			t.Errorf("empty.txt = %d bytes", files[2].Size)
		}
		if time.Since(files[1].UpdatedAt) > time.Hour || files[1].UpdatedAt.IsZero() {
			t.Errorf("UpdatedAt = %v", files[1].UpdatedAt)
		}
		infos, err := s.ListFileInfos(bg, "run-1")
		if err != nil || len(infos) != len(files) {
			t.Fatalf("ListFileInfos = %d files, %v; want %d", len(infos), err, len(files))
		}
		for i, f := range infos {
			w := files[i]
			if f.Path != w.Path || f.Size != w.Size || f.Mode != w.Mode || !f.UpdatedAt.Equal(w.UpdatedAt) || f.Content != nil {
				t.Errorf("ListFileInfos[%d] = %+v, want %s size %d mode %o at %v without content", i, f, w.Path, w.Size, w.Mode, w.UpdatedAt)
			}
		}
		f, err := s.GetFile(bg, "run-1", "b/notes.md")
		if err != nil || string(f.Content) != "# notes\n" {
			t.Errorf("GetFile = %q, %v", f.Content, err)
		}
		_, err = s.GetFile(bg, "run-1", "nope.md")
		mustErr(t, "GetFile of a missing file", err, store.ErrNotFound)
	})
	t.Run("OverwriteAndDelete", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		l := mustClaim(t, s, newOwner("r"), "run-1", longTTL)
		mustCommit(t, s, l, store.Write{Files: []store.FileWrite{{Path: "x", Content: []byte("one"), Mode: 0o644}, {Path: "y", Content: []byte("y"), Mode: 0o644}}})
		mustCommit(t, s, l, store.Write{Files: []store.FileWrite{{Path: "x", Content: []byte("two!"), Mode: 0o600}, {Path: "y", Deleted: true}}})
		f, err := s.GetFile(bg, "run-1", "x")
		if err != nil || string(f.Content) != "two!" || f.Size != 4 || f.Mode != 0o600 {
			t.Errorf("overwritten x = %q size %d mode %o, %v", f.Content, f.Size, f.Mode, err)
		}
		_, err = s.GetFile(bg, "run-1", "y")
		mustErr(t, "GetFile of a deleted file", err, store.ErrNotFound)
		files, _ := s.ListFiles(bg, "run-1")
		if len(files) != 1 {
			t.Errorf("ListFiles after delete = %d files, want 1", len(files))
		}
	})
	t.Run("FencedCommitSavesNoFiles", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		old := mustClaim(t, s, newOwner("old"), "run-1", shortTTL)
		time.Sleep(2 * shortTTL)
		eventuallyClaim(t, s, newOwner("new"), "run-1", longTTL)
		_, err := s.Commit(bg, old, store.Write{Files: []store.FileWrite{{Path: "late.txt", Content: []byte("stale"), Mode: 0o644}}})
		mustErr(t, "stale commit with files", err, store.ErrFenced)
		if files, _ := s.ListFiles(bg, "run-1"); len(files) != 0 {
			t.Errorf("a fenced commit saved %d files", len(files))
		}
	})
	t.Run("PerRunAndDeletedWithRun", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		for _, run := range []string{"run-1", "run-2"} {
			mustCreateRun(t, s, run)
			l := mustClaim(t, s, newOwner("r"), run, longTTL)
			mustCommit(t, s, l, store.Write{Files: []store.FileWrite{{Path: "f", Content: []byte(run), Mode: 0o644}}})
		}
		if f, _ := s.GetFile(bg, "run-2", "f"); string(f.Content) != "run-2" {
			t.Errorf("run-2's file = %q", f.Content)
		}
		if err := s.DeleteRun(bg, "run-1"); err != nil {
			t.Fatal(err)
		}
		mustCreateRun(t, s, "run-1")
		if files, _ := s.ListFiles(bg, "run-1"); len(files) != 0 {
			t.Errorf("a re-created run inherited %d files", len(files))
		}
	})
}

func testRunners(t *testing.T, open opener) {
	t.Run("HeartbeatAndList", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		start := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
		for _, n := range []string{"r-b", "r-a"} {
			if err := s.Heartbeat(bg, store.RunnerInfo{Name: n, Version: "v1", Host: "h", PID: 42, StartedAt: start, RunsHeld: 3}); err != nil {
				t.Fatalf("Heartbeat: %v", err)
			}
		}
		rs, err := s.ListRunners(bg)
		if err != nil || len(rs) != 2 || rs[0].Name != "r-a" {
			t.Fatalf("ListRunners = %s, %v", js(rs), err)
		}
		first := rs[0].HeartbeatAt
		if rs[0].RunsHeld != 3 || rs[0].PID != 42 || !rs[0].StartedAt.Equal(start) || first.IsZero() {
			t.Errorf("runner = %s", js(rs[0]))
		}
		time.Sleep(20 * time.Millisecond)
		if err := s.Heartbeat(bg, store.RunnerInfo{Name: "r-a", Version: "v2", Host: "h", PID: 43, StartedAt: start, RunsHeld: 0}); err != nil {
			t.Fatal(err)
		}
		rs, _ = s.ListRunners(bg)
		if len(rs) != 2 || rs[0].Version != "v2" || rs[0].RunsHeld != 0 || !rs[0].HeartbeatAt.After(first) {
			t.Errorf("after a second heartbeat: %s (first heartbeat %v)", js(rs[0]), first)
		}
	})
}
