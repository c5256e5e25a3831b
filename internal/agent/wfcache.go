package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"sort"
	"strconv"
	"sync"

	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/workflow"
)

// wfCacheMax bounds the validated workflows an engine keeps (one per document and pins in use).
const wfCacheMax = 256

// wfCache keeps workflows validated by earlier drives: every run of an agent revision runs the
// same document, and validating it again on each drive cost ~8% of a runner's CPU. An entry is
// keyed by the document's bytes and the revisions it pins; it is used only if every child it
// resolved still resolves to the same bytes, so what runs is always what Validate accepted.
// A document that fails validation is never kept: it is refused again on every drive.
type wfCache struct {
	mu      sync.Mutex
	entries map[wfKey]*wfEntry
}

type wfKey [sha256.Size]byte

type wfEntry struct {
	w *workflow.Workflow
	// children are the documents the validation resolved, by name.
	children map[string][]byte
}

// workflowKey is the hash of the document and the pinned children's names and revisions.
func workflowKey(doc []byte, pins map[string]int64) wfKey {
	h := sha256.New()
	h.Write(strconv.AppendInt(nil, int64(len(doc)), 10))
	h.Write([]byte{0})
	h.Write(doc)
	names := make([]string, 0, len(pins))
	for n := range pins {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		h.Write([]byte{0})
		h.Write([]byte(n))
		h.Write([]byte{0})
		h.Write(strconv.AppendInt(nil, pins[n], 10))
	}
	var k wfKey
	h.Sum(k[:0])
	return k
}

// validate returns the revision's workflow validated as runnable, with its named children at
// the revisions pinned in pins, from the cache when an earlier drive validated the same.
func (c *wfCache) validate(ctx context.Context, st store.RevisionGetter, doc []byte, pins map[string]int64) (*workflow.Workflow, workflow.Invalid) {
	key := workflowKey(doc, pins)
	resolve := store.PinnedWorkflows(ctx, st, pins)
	c.mu.Lock()
	e := c.entries[key]
	c.mu.Unlock()
	if e != nil && e.current(resolve) {
		return e.w, nil
	}
	children := map[string][]byte{}
	var mu sync.Mutex
	w, errs := workflow.Validate(doc, workflow.Options{Runnable: true, Resolve: func(name string) ([]byte, error) {
		b, err := resolve(name)
		if err == nil {
			mu.Lock()
			children[name] = b
			mu.Unlock()
		}
		return b, err
	}})
	if len(errs) > 0 || w == nil {
		return w, errs
	}
	c.mu.Lock()
	if c.entries == nil || len(c.entries) >= wfCacheMax {
		c.entries = map[wfKey]*wfEntry{}
	}
	c.entries[key] = &wfEntry{w: w, children: children}
	c.mu.Unlock()
	return w, nil
}

// current reports whether every child the entry was validated with resolves to the same bytes.
func (e *wfEntry) current(resolve func(string) ([]byte, error)) bool {
	for name, was := range e.children {
		now, err := resolve(name)
		if err != nil || !bytes.Equal(now, was) {
			return false
		}
	}
	return true
}
