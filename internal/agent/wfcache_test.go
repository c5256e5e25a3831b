package agent

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// revs is a store's agent revisions: name → revision → workflow document.
type revs struct {
	docs  map[string]map[int64]string
	reads int
}

func (r *revs) GetAgentRevision(_ context.Context, name string, rev int64) (*api.AgentSpec, error) {
	r.reads++
	doc, ok := r.docs[name][rev]
	if !ok {
		return nil, store.ErrNotFound
	}
	return &api.AgentSpec{Workflow: []byte(doc)}, nil
}

func childDoc(v int) string {
	return fmt.Sprintf(`{"v": 2, "name": "child", "schemas": {"CI": {"type": "object", "required": ["t"]}, "N": {"type": "number"}},
  "input": {"schemaId": "CI"}, "output": {"schemaId": "N", "path": "v"},
  "root": {"node": "chain", "steps": [{"node": "code", "label": "answer", "code": "(s) => ({ v: %d })"}]}}`, v)
}

const parentDoc = `{"v": 2, "name": "parent", "schemas": {"In": {"type": "object"}, "N": {"type": "number"}, "Out": {"type": "object", "required": ["got"]}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "Out"},
  "root": {"node": "chain", "steps": [
    {"node": "workflow", "label": "sub", "workflow": "child", "input": {"t": "x"}, "out": "N", "as": "got"}]}}`

// childCode is the code of the child node the validated parent runs.
func childCode(t *testing.T, c *wfCache, st *revs, doc string, pins map[string]int64) string {
	t.Helper()
	w, errs := c.validate(context.Background(), st, []byte(doc), pins)
	if len(errs) > 0 {
		t.Fatalf("validate: %v", errs)
	}
	return w.Root.Steps[0].Child.Root.Steps[0].Code
}

// A revision's workflow is validated once and then served from the cache while the document and
// the children it pins are the same; a new revision of the parent or of a child, or a child whose
// pinned revision now holds another document, is validated again.
func TestWorkflowCacheRevalidatesWhatChanged(t *testing.T) {
	st := &revs{docs: map[string]map[int64]string{"child": {1: childDoc(1), 2: childDoc(2)}}}
	var c wfCache
	ctx := context.Background()
	w1, errs := c.validate(ctx, st, []byte(parentDoc), map[string]int64{"child": 1})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	w2, _ := c.validate(ctx, st, []byte(parentDoc), map[string]int64{"child": 1})
	if w1 != w2 {
		t.Error("the same revision was validated again; want the cached workflow")
	}
	if got := childCode(t, &c, st, parentDoc, map[string]int64{"child": 2}); !strings.Contains(got, "v: 2") {
		t.Errorf("parent pinning child revision 2 runs child code %q", got)
	}
	// The agent was deleted and made again: revision 1 of child now holds another document.
	st.docs["child"][1] = childDoc(3)
	if got := childCode(t, &c, st, parentDoc, map[string]int64{"child": 1}); !strings.Contains(got, "v: 3") {
		t.Errorf("after child revision 1 changed, the parent runs child code %q; want the new document's", got)
	}
	// A new revision of the parent (another document) is its own entry.
	changed := strings.Replace(parentDoc, `"label": "sub"`, `"label": "sub2"`, 1)
	w3, errs := c.validate(ctx, st, []byte(changed), map[string]int64{"child": 1})
	if len(errs) > 0 || w3.Root.Steps[0].Label != "sub2" {
		t.Errorf("the parent's new revision: %v, label %q", errs, w3.Root.Steps[0].Label)
	}
}

// A workflow that does not validate is refused on every drive, never kept; nor is one whose
// child became unreadable or invalid since it was cached.
func TestWorkflowCacheRefusesBadWorkflows(t *testing.T) {
	st := &revs{docs: map[string]map[int64]string{"child": {1: childDoc(1)}}}
	var c wfCache
	ctx := context.Background()
	bad := strings.Replace(parentDoc, `"node": "chain"`, `"node": "nosuchkind"`, 1)
	for i := range 2 {
		if _, errs := c.validate(ctx, st, []byte(bad), map[string]int64{"child": 1}); len(errs) == 0 {
			t.Fatalf("drive %d: a workflow with an unknown node kind was accepted", i+1)
		}
	}
	if _, errs := c.validate(ctx, st, []byte(parentDoc), nil); len(errs) == 0 {
		t.Error("a parent whose child has no pinned revision was accepted")
	}
	if _, errs := c.validate(ctx, st, []byte(parentDoc), map[string]int64{"child": 1}); len(errs) > 0 {
		t.Fatal(errs)
	}
	st.docs["child"][1] = `{"v": 2, "name": "child", "root": {"node": "nosuchkind"}}`
	if _, errs := c.validate(ctx, st, []byte(parentDoc), map[string]int64{"child": 1}); len(errs) == 0 {
		t.Error("a cached parent was served after its pinned child became invalid")
	}
	delete(st.docs["child"], 1)
	if _, errs := c.validate(ctx, st, []byte(parentDoc), map[string]int64{"child": 1}); len(errs) == 0 {
		t.Error("a cached parent was served after its pinned child revision went away")
	}
}

// The cache keeps at most wfCacheMax workflows.
func TestWorkflowCacheBounded(t *testing.T) {
	st := &revs{docs: map[string]map[int64]string{}}
	var c wfCache
	for i := range wfCacheMax + 10 {
		doc := strings.Replace(childDoc(i), `"name": "child"`, fmt.Sprintf(`"name": "c%d"`, i), 1)
		if _, errs := c.validate(context.Background(), st, []byte(doc), nil); len(errs) > 0 {
			t.Fatal(errs)
		}
		if len(c.entries) > wfCacheMax {
			t.Fatalf("%d entries kept", len(c.entries))
		}
	}
}

func BenchmarkWorkflowValidate(b *testing.B) {
	st := &revs{docs: map[string]map[int64]string{"child": {1: childDoc(1)}}}
	b.Run("cached", func(b *testing.B) {
		var c wfCache
		for b.Loop() {
			c.validate(context.Background(), st, []byte(parentDoc), map[string]int64{"child": 1})
		}
	})
	b.Run("uncached", func(b *testing.B) {
		for b.Loop() {
			var c wfCache
			c.validate(context.Background(), st, []byte(parentDoc), map[string]int64{"child": 1})
		}
	})
}
