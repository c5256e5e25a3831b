package storetest

import (
	"errors"
	"sync"
	"testing"

	"agentrun.dev/agentrun/internal/store"
)

// Learning: main moves only from the commit a writer started from, objects and the move are
// written together or not at all, and each agent's repository is its own.
func testLearning(t *testing.T, open opener) {
	s := open(t)
	if m, err := s.LearningMain(bg, "a"); err != nil || m != "" {
		t.Fatalf("LearningMain of a new agent = %q, %v; want \"\"", m, err)
	}
	o1 := store.GitObject{Hash: "1111", Type: 3, Data: []byte("note one")}
	if err := s.UpdateLearningMain(bg, "a", []store.GitObject{o1}, "", "c1"); err != nil {
		t.Fatal(err)
	}
	o2 := store.GitObject{Hash: "2222", Type: 3, Data: []byte{0, 1, 2, 0xff}}
	// A writer that started before c1 is refused, and writes none of its objects.
	err := s.UpdateLearningMain(bg, "a", []store.GitObject{o2}, "", "c2")
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("stale UpdateLearningMain = %v, want ErrConflict", err)
	}
	objs, err := s.LearningObjects(bg, "a")
	if err != nil || len(objs) != 1 || objs[0].Hash != "1111" || objs[0].Type != 3 || string(objs[0].Data) != "note one" {
		t.Fatalf("LearningObjects after a refused update = %+v, %v", objs, err)
	}
	// An object already stored is kept; main moves on.
	if err := s.UpdateLearningMain(bg, "a", []store.GitObject{o1, o2}, "c1", "c2"); err != nil {
		t.Fatal(err)
	}
	if m, _ := s.LearningMain(bg, "a"); m != "c2" {
		t.Fatalf("main = %q, want c2", m)
	}
	objs, _ = s.LearningObjects(bg, "a")
	if len(objs) != 2 {
		t.Fatalf("objects = %d, want 2", len(objs))
	}
	for _, o := range objs {
		if o.Hash == "2222" && string(o.Data) != string(o2.Data) {
			t.Fatalf("binary object came back as %v", o.Data)
		}
	}
	if m, _ := s.LearningMain(bg, "b"); m != "" {
		t.Fatalf("main of another agent = %q", m)
	}
	// Many writers from one main: exactly one wins.
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.UpdateLearningMain(bg, "a", nil, "c2", "c3-"+string(rune('a'+i)))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case !errors.Is(err, store.ErrConflict):
				t.Errorf("racing UpdateLearningMain = %v", err)
			}
		}()
	}
	wg.Wait()
	if won != 1 {
		t.Fatalf("%d racing writers moved main, want 1", won)
	}
}
