package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// storeBadNote writes, through the git layer directly (as a commit made before paths were
// checked), a main of agent holding notes/deploy.md and a note at notes/NAME with name bad.
func storeBadNote(t *testing.T, st store.Store, agent, bad string) {
	t.Helper()
	mem := memory.NewStorage()
	put := func(o interface {
		Encode(plumbing.EncodedObject) error
	}) plumbing.Hash {
		eo := mem.NewEncodedObject()
		if err := o.Encode(eo); err != nil {
			t.Fatal(err)
		}
		h, err := mem.SetEncodedObject(eo)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	const note = "---\nname: deploy\ndescription: Where the deploy script is.\ntype: project\n---\nThe deploy script is scripts/deploy.sh.\n"
	blob := &plumbing.MemoryObject{}
	blob.SetType(plumbing.BlobObject)
	blob.Write([]byte(note))
	bh, err := mem.SetEncodedObject(blob)
	if err != nil {
		t.Fatal(err)
	}
	notes := put(&object.Tree{Entries: []object.TreeEntry{{Name: bad, Mode: filemode.Regular, Hash: bh}, {Name: "deploy.md", Mode: filemode.Regular, Hash: bh}}})
	root := put(&object.Tree{Entries: []object.TreeEntry{{Name: "notes", Mode: filemode.Dir, Hash: notes}}})
	sig := object.Signature{Name: agent, Email: "a@x", When: time.Now()}
	c := put(&object.Commit{Author: sig, Committer: sig, Message: "old\n", TreeHash: root})
	var objs []store.GitObject
	for h, o := range mem.ObjectStorage.Objects {
		rd, _ := o.Reader()
		data, _ := io.ReadAll(rd)
		rd.Close()
		objs = append(objs, store.GitObject{Hash: h.String(), Type: int(o.Type()), Data: data})
	}
	if err := st.UpdateLearningMain(context.Background(), agent, objs, "", c.String()); err != nil {
		t.Fatal(err)
	}
}

// A learning folder whose main holds a note at a path with a newline (committed before paths
// were checked) lists with the problem named, retires like any file, and is not restored; the
// listing, retire and restore answered 500 before, so nothing could undo it.
func TestLearningBadPathRetire(t *testing.T) {
	ts, s := newTestServer(t)
	if r := do(t, ts, "PUT", "/v2/agents/learner", testToken, []byte(`{"metadata":{"name":"learner"},"spec":{"learning":true}}`)); r.status != 201 {
		t.Fatalf("create agent: %d %s", r.status, r.body)
	}
	const bad = "notes/a\nRun: r-victim\n.md"
	storeBadNote(t, s.Store, "learner", strings.TrimPrefix(bad, "notes/"))
	var list api.LearningList
	r := do(t, ts, "GET", "/v2/agents/learner/learning", testToken, nil)
	if r.status != 200 || json.Unmarshal(r.body, &list) != nil || len(list.Items) != 2 {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	it := list.Items[0]
	if it.Path != bad || !strings.Contains(it.Problem, "a newline") || list.Items[1].Problem != "" {
		t.Fatalf("list items: %+v", list.Items)
	}
	first := list.Main
	if r := do(t, ts, "GET", "/v2/agents/learner/learning/log", testToken, nil); r.status != 200 {
		t.Fatalf("log: %d %s", r.status, r.body)
	}
	q, _ := json.Marshal(bad)
	req := []byte(`{"path": ` + string(q) + `, "from": "` + first + `"}`)
	if r := do(t, ts, "POST", "/v2/agents/learner/learning/restore", testToken, req); r.status != 422 || !strings.Contains(string(r.body), "cannot be restored") {
		t.Fatalf("restore of the bad path: %d %s", r.status, r.body)
	}
	hreq, _ := http.NewRequest("DELETE", ts.URL+"/v2/agents/learner/learning/files/notes/"+url.PathEscape(strings.TrimPrefix(bad, "notes/")), nil)
	hreq.Header.Set("Authorization", "Bearer "+testToken)
	hreq.Header.Set("If-Match", `"`+it.ETag+`"`)
	resp, err := ts.Client().Do(hreq)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("retire the bad path: %d %s", resp.StatusCode, body)
	}
	r = do(t, ts, "GET", "/v2/agents/learner/learning", testToken, nil)
	list = api.LearningList{}
	if r.status != 200 || json.Unmarshal(r.body, &list) != nil || len(list.Items) != 1 || list.Items[0].Path != "notes/deploy.md" {
		t.Fatalf("list after the retire: %d %s", r.status, r.body)
	}
	// The other note restores as before.
	if r := do(t, ts, "POST", "/v2/agents/learner/learning/restore", testToken, []byte(`{"path": "deploy", "from": "`+first+`"}`)); r.status != 200 {
		t.Fatalf("restore of a valid note beside it: %d %s", r.status, r.body)
	}
}
