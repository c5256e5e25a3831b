package storetest

import (
	"testing"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

func testAgents(t *testing.T, open opener) {
	t.Run("CreateSetsMetadata", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		a := newAgent("alpha")
		want := newAgent("alpha")
		if err := s.CreateAgent(bg, a); err != nil {
			t.Fatalf("CreateAgent: %v", err)
		}
		got, err := s.GetAgent(bg, "alpha")
		if err != nil {
			t.Fatalf("GetAgent: %v", err)
		}
		for _, c := range []struct {
			what string
			a    *api.Agent
		}{{"agent passed to CreateAgent", a}, {"GetAgent", got}} {
			m := c.a.Metadata
			if m.Name != "alpha" {
				t.Errorf("%s: name = %q, want %q", c.what, m.Name, "alpha")
			}
			if m.UID == "" {
				t.Errorf("%s: uid is empty, want it set", c.what)
			}
			if m.ResourceVersion == "" {
				t.Errorf("%s: resourceVersion is empty, want it set", c.what)
			}
			if m.Generation != 1 {
				t.Errorf("%s: generation = %d, want 1", c.what, m.Generation)
			}
			if m.CreationTimestamp == nil || m.CreationTimestamp.IsZero() {
				t.Errorf("%s: creationTimestamp = %v, want it set", c.what, m.CreationTimestamp)
			}
			if c.a.Status.Revision != 1 {
				t.Errorf("%s: status.revision = %d, want 1", c.what, c.a.Status.Revision)
			}
			if !sameValue(c.a.Spec, want.Spec) {
				t.Errorf("%s: spec = %s, want %s", c.what, js(c.a.Spec), js(want.Spec))
			}
			if !sameValue(m.Labels, want.Metadata.Labels) {
				t.Errorf("%s: labels = %v, want %v", c.what, m.Labels, want.Metadata.Labels)
			}
		}
		if a.Metadata.UID != got.Metadata.UID || a.Metadata.ResourceVersion != got.Metadata.ResourceVersion {
			t.Errorf("CreateAgent set uid %q rv %q, GetAgent returns uid %q rv %q; want the same",
				a.Metadata.UID, a.Metadata.ResourceVersion, got.Metadata.UID, got.Metadata.ResourceVersion)
		}
		b := mustCreateAgent(t, s, "beta")
		if b.Metadata.UID == a.Metadata.UID {
			t.Errorf("two agents share uid %q, want distinct uids", a.Metadata.UID)
		}
		spec, err := s.GetAgentRevision(bg, "alpha", 1)
		if err != nil {
			t.Fatalf("GetAgentRevision(alpha, 1): %v", err)
		}
		if !sameValue(spec, want.Spec) {
			t.Errorf("GetAgentRevision(alpha, 1) = %s, want %s", js(spec), js(want.Spec))
		}
	})

	t.Run("CreateDuplicate", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateAgent(t, s, "alpha")
		dup := newAgent("alpha")
		dup.Spec.System = "other"
		wantErr(t, "CreateAgent(duplicate)", s.CreateAgent(bg, dup), store.ErrAlreadyExists)
		got, err := s.GetAgent(bg, "alpha")
		if err != nil {
			t.Fatalf("GetAgent: %v", err)
		}
		if got.Spec.System != newAgent("alpha").Spec.System {
			t.Errorf("after a refused duplicate create, spec.system = %q, want the first agent's %q", got.Spec.System, newAgent("alpha").Spec.System)
		}
	})

	t.Run("GetUnknown", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		_, err := s.GetAgent(bg, "nope")
		wantErr(t, "GetAgent(unknown)", err, store.ErrNotFound)
		_, err = s.GetAgentRevision(bg, "nope", 1)
		wantErr(t, "GetAgentRevision(unknown agent)", err, store.ErrNotFound)
		mustCreateAgent(t, s, "alpha")
		_, err = s.GetAgentRevision(bg, "alpha", 7)
		wantErr(t, "GetAgentRevision(alpha, unknown revision 7)", err, store.ErrNotFound)
		wantErr(t, "UpdateAgent(unknown)", s.UpdateAgent(bg, newAgent("nope")), store.ErrNotFound)
		wantErr(t, "DeleteAgent(unknown)", s.DeleteAgent(bg, "nope"), store.ErrNotFound)
	})

	t.Run("UpdateStaleResourceVersion", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		a := mustCreateAgent(t, s, "alpha")
		staleRV := a.Metadata.ResourceVersion
		// Move the resource version on.
		a.Spec.System = "second"
		if err := s.UpdateAgent(bg, a); err != nil {
			t.Fatalf("UpdateAgent: %v", err)
		}
		before, err := s.GetAgent(bg, "alpha")
		if err != nil {
			t.Fatalf("GetAgent: %v", err)
		}
		if before.Metadata.ResourceVersion == staleRV {
			t.Fatalf("resourceVersion %q did not change on update", staleRV)
		}
		stale := newAgent("alpha")
		stale.Metadata.ResourceVersion = staleRV
		stale.Spec.System = "third"
		stale.Metadata.Labels = map[string]string{"team": "stale"}
		wantErr(t, "UpdateAgent(stale resourceVersion)", s.UpdateAgent(bg, stale), store.ErrConflict)
		after, err := s.GetAgent(bg, "alpha")
		if err != nil {
			t.Fatalf("GetAgent: %v", err)
		}
		if !sameValue(after, before) {
			t.Errorf("a refused update changed the agent:\n got  %s\n want %s", js(after), js(before))
		}
		if _, err := s.GetAgentRevision(bg, "alpha", 3); !errIs(err, store.ErrNotFound) {
			t.Errorf("GetAgentRevision(alpha, 3) after a refused update: got error %v, want ErrNotFound (no revision made)", err)
		}
	})

	t.Run("UpdateChangedSpec", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		a := mustCreateAgent(t, s, "alpha")
		oldSpec := a.Spec
		oldRV := a.Metadata.ResourceVersion
		uid := a.Metadata.UID
		created := a.Metadata.CreationTimestamp
		upd := newAgent("alpha")
		upd.Metadata.ResourceVersion = oldRV
		upd.Spec.System = "You are terse."
		upd.Spec.Tools = []string{"read", "bash"}
		newSpec := upd.Spec
		if err := s.UpdateAgent(bg, upd); err != nil {
			t.Fatalf("UpdateAgent(changed spec): %v", err)
		}
		got, err := s.GetAgent(bg, "alpha")
		if err != nil {
			t.Fatalf("GetAgent: %v", err)
		}
		for _, c := range []struct {
			what string
			a    *api.Agent
		}{{"agent passed to UpdateAgent", upd}, {"GetAgent", got}} {
			if c.a.Status.Revision != 2 {
				t.Errorf("%s: status.revision = %d, want 2", c.what, c.a.Status.Revision)
			}
			if c.a.Metadata.Generation != 2 {
				t.Errorf("%s: generation = %d, want 2", c.what, c.a.Metadata.Generation)
			}
			if c.a.Metadata.ResourceVersion == "" || c.a.Metadata.ResourceVersion == oldRV {
				t.Errorf("%s: resourceVersion = %q, want a new one (old %q)", c.what, c.a.Metadata.ResourceVersion, oldRV)
			}
			if c.a.Metadata.UID != uid {
				t.Errorf("%s: uid = %q, want unchanged %q", c.what, c.a.Metadata.UID, uid)
			}
			if c.a.Metadata.CreationTimestamp == nil || created == nil || !c.a.Metadata.CreationTimestamp.Equal(*created) {
				t.Errorf("%s: creationTimestamp = %v, want unchanged %v", c.what, c.a.Metadata.CreationTimestamp, created)
			}
			if !sameValue(c.a.Spec, newSpec) {
				t.Errorf("%s: spec = %s, want %s", c.what, js(c.a.Spec), js(newSpec))
			}
		}
		r1, err := s.GetAgentRevision(bg, "alpha", 1)
		if err != nil {
			t.Fatalf("GetAgentRevision(alpha, 1): %v", err)
		}
		if !sameValue(r1, oldSpec) {
			t.Errorf("GetAgentRevision(alpha, 1) = %s, want the old spec %s", js(r1), js(oldSpec))
		}
		r2, err := s.GetAgentRevision(bg, "alpha", 2)
		if err != nil {
			t.Fatalf("GetAgentRevision(alpha, 2): %v", err)
		}
		if !sameValue(r2, newSpec) {
			t.Errorf("GetAgentRevision(alpha, 2) = %s, want the new spec %s", js(r2), js(newSpec))
		}
	})

	t.Run("UpdateSameSpecNoRevision", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		a := mustCreateAgent(t, s, "alpha")
		oldRV := a.Metadata.ResourceVersion
		upd := newAgent("alpha")
		upd.Metadata.ResourceVersion = oldRV
		upd.Metadata.Labels = map[string]string{"team": "infra", "tier": "gold"}
		if err := s.UpdateAgent(bg, upd); err != nil {
			t.Fatalf("UpdateAgent(labels only): %v", err)
		}
		got, err := s.GetAgent(bg, "alpha")
		if err != nil {
			t.Fatalf("GetAgent: %v", err)
		}
		for _, c := range []struct {
			what string
			a    *api.Agent
		}{{"agent passed to UpdateAgent", upd}, {"GetAgent", got}} {
			if c.a.Status.Revision != 1 {
				t.Errorf("%s: status.revision = %d, want 1 (identical spec makes no revision)", c.what, c.a.Status.Revision)
			}
			if c.a.Metadata.Generation != 1 {
				t.Errorf("%s: generation = %d, want 1 (identical spec)", c.what, c.a.Metadata.Generation)
			}
			if !sameValue(c.a.Metadata.Labels, upd.Metadata.Labels) {
				t.Errorf("%s: labels = %v, want %v", c.what, c.a.Metadata.Labels, map[string]string{"team": "infra", "tier": "gold"})
			}
			if c.a.Metadata.ResourceVersion == oldRV {
				t.Errorf("%s: resourceVersion = %q unchanged after a labels change, want a new one", c.what, oldRV)
			}
		}
		if _, err := s.GetAgentRevision(bg, "alpha", 2); !errIs(err, store.ErrNotFound) {
			t.Errorf("GetAgentRevision(alpha, 2) after a labels-only update: got error %v, want ErrNotFound", err)
		}
	})

	t.Run("UpdateWithoutResourceVersion", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateAgent(t, s, "alpha")
		upd := newAgent("alpha") // empty resourceVersion: unconditional
		upd.Spec.System = "changed"
		if err := s.UpdateAgent(bg, upd); err != nil {
			t.Fatalf("UpdateAgent(no resourceVersion): %v", err)
		}
		got, err := s.GetAgent(bg, "alpha")
		if err != nil {
			t.Fatalf("GetAgent: %v", err)
		}
		if got.Spec.System != "changed" || got.Status.Revision != 2 {
			t.Errorf("after unconditional update: spec.system %q revision %d, want %q and 2", got.Spec.System, got.Status.Revision, "changed")
		}
	})

	t.Run("DeleteKeepsRevisions", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		a := mustCreateAgent(t, s, "alpha")
		spec1 := a.Spec
		a.Spec.System = "v2"
		if err := s.UpdateAgent(bg, a); err != nil {
			t.Fatalf("UpdateAgent: %v", err)
		}
		spec2 := a.Spec
		if err := s.DeleteAgent(bg, "alpha"); err != nil {
			t.Fatalf("DeleteAgent: %v", err)
		}
		_, err := s.GetAgent(bg, "alpha")
		wantErr(t, "GetAgent after DeleteAgent", err, store.ErrNotFound)
		list, err := s.ListAgents(bg)
		if err != nil {
			t.Fatalf("ListAgents: %v", err)
		}
		if len(list) != 0 {
			t.Errorf("ListAgents after delete = %d agents, want 0", len(list))
		}
		for rev, want := range map[int64]api.AgentSpec{1: spec1, 2: spec2} {
			spec, err := s.GetAgentRevision(bg, "alpha", rev)
			if err != nil {
				t.Errorf("GetAgentRevision(alpha, %d) after delete: %v, want the revision kept", rev, err)
				continue
			}
			if !sameValue(spec, want) {
				t.Errorf("GetAgentRevision(alpha, %d) after delete = %s, want %s", rev, js(spec), js(want))
			}
		}
		// The name is free again.
		if err := s.CreateAgent(bg, newAgent("alpha")); err != nil {
			t.Errorf("CreateAgent(alpha) after DeleteAgent(alpha): %v, want the name reusable", err)
		}
	})

	t.Run("RecreateAfterDeleteThenUpdate", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		a := mustCreateAgent(t, s, "alpha")
		a.Spec.System = "old v2"
		if err := s.UpdateAgent(bg, a); err != nil {
			t.Fatalf("UpdateAgent: %v", err)
		}
		if err := s.DeleteAgent(bg, "alpha"); err != nil {
			t.Fatalf("DeleteAgent: %v", err)
		}
		b := newAgent("alpha")
		b.Spec.System = "new v1"
		if err := s.CreateAgent(bg, b); err != nil {
			t.Fatalf("CreateAgent(alpha) after DeleteAgent(alpha): %v, want the name reusable", err)
		}
		// Revisions continue past the old incarnation's, so runs pinned to those keep their spec.
		if b.Status.Revision != 3 || b.Metadata.UID == a.Metadata.UID {
			t.Errorf("re-created agent: revision %d uid %q, want revision 3 (after the old 1 and 2) and a new uid (old %q)", b.Status.Revision, b.Metadata.UID, a.Metadata.UID)
		}
		if old, err := s.GetAgentRevision(bg, "alpha", 2); err != nil || old.System != "old v2" {
			t.Errorf("GetAgentRevision(alpha, 2) after re-creating = %s, %v; want the old incarnation's spec", js(old), err)
		}
		b.Spec.System = "new v2"
		if err := s.UpdateAgent(bg, b); err != nil {
			t.Fatalf("UpdateAgent(changed spec) of a re-created agent whose old incarnation had 2 revisions: %v, want success", err)
		}
		got, err := s.GetAgent(bg, "alpha")
		if err != nil {
			t.Fatalf("GetAgent: %v", err)
		}
		if got.Spec.System != "new v2" || got.Status.Revision != b.Status.Revision {
			t.Errorf("GetAgent after the update = system %q revision %d, want %q and %d", got.Spec.System, got.Status.Revision, "new v2", b.Status.Revision)
		}
		spec, err := s.GetAgentRevision(bg, "alpha", got.Status.Revision)
		if err != nil || spec.System != "new v2" {
			t.Errorf("GetAgentRevision(alpha, %d) = %s, %v; want the new spec", got.Status.Revision, js(spec), err)
		}
	})

	t.Run("ListOrderedByName", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		for _, n := range []string{"charlie", "alpha", "delta", "bravo"} {
			mustCreateAgent(t, s, n)
		}
		list, err := s.ListAgents(bg)
		if err != nil {
			t.Fatalf("ListAgents: %v", err)
		}
		var names []string
		for _, a := range list {
			names = append(names, a.Metadata.Name)
			if a.Metadata.UID == "" || a.Status.Revision != 1 {
				t.Errorf("ListAgents: %q has uid %q revision %d, want uid set and revision 1", a.Metadata.Name, a.Metadata.UID, a.Status.Revision)
			}
		}
		want := []string{"alpha", "bravo", "charlie", "delta"}
		if !sameValue(names, want) {
			t.Errorf("ListAgents names = %v, want %v", names, want)
		}
	})
}
