package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

func newTrigger(name string) *api.Trigger {
	return &api.Trigger{
		TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "Trigger"},
		Metadata: api.ObjectMeta{Name: name},
		Spec: api.TriggerSpec{Agent: "agent-a", Input: "report for {{.scheduledTime}}", MaxCostUSD: "0.50",
			Schedule: &api.TriggerSchedule{Cron: "0 9 * * MON", TimeZone: "Europe/Berlin", Missed: api.MissedSkip}},
	}
}

func slotFire(trigger string, slot time.Time) api.TriggerFire {
	return api.TriggerFire{Trigger: trigger, Key: "slot:" + slot.UTC().Format(time.RFC3339), Source: api.FireSourceSchedule, ScheduledTime: &slot}
}

// finishRun claims a run and commits it finished.
func finishRun(t *testing.T, s store.Store, name string) {
	t.Helper()
	l := eventuallyClaim(t, s, newOwner("finisher"), name, longTTL)
	st := mustGetRun(t, s, name).Status
	st.Phase, st.Reason = api.PhaseSucceeded, api.ReasonCompleted
	mustCommit(t, s, l, store.Write{Status: &st, Release: true})
}

func testTriggers(t *testing.T, open opener) {
	t.Run("CRUD", func(t *testing.T) {
		s := open(t)
		tr := newTrigger("weekly")
		if err := s.CreateTrigger(bg, tr); err != nil {
			t.Fatalf("CreateTrigger: %v", err)
		}
		if tr.Metadata.UID == "" || tr.Metadata.ResourceVersion != "1" || tr.Metadata.Generation != 1 || tr.Metadata.CreationTimestamp == nil {
			t.Errorf("created metadata %+v", tr.Metadata)
		}
		wantErr(t, "second CreateTrigger", s.CreateTrigger(bg, newTrigger("weekly")), store.ErrAlreadyExists)
		got, err := s.GetTrigger(bg, "weekly")
		if err != nil || !sameValue(got.Spec, tr.Spec) || got.Kind != "Trigger" {
			t.Fatalf("GetTrigger = %+v, %v", got, err)
		}
		up := newTrigger("weekly")
		up.Spec.Suspend = true
		up.Metadata.ResourceVersion = "1"
		if err := s.UpdateTrigger(bg, up); err != nil {
			t.Fatalf("UpdateTrigger: %v", err)
		}
		if up.Metadata.ResourceVersion != "2" || up.Metadata.Generation != 2 || up.Metadata.UID != tr.Metadata.UID {
			t.Errorf("updated metadata %+v", up.Metadata)
		}
		stale := newTrigger("weekly")
		stale.Metadata.ResourceVersion = "1"
		wantErr(t, "update at a stale resourceVersion", s.UpdateTrigger(bg, stale), store.ErrConflict)
		wantErr(t, "update of a missing trigger", s.UpdateTrigger(bg, newTrigger("nope")), store.ErrNotFound)
		mustCreateTriggerNamed(t, s, "daily")
		list, err := s.ListTriggers(bg)
		if err != nil || len(list) != 2 || list[0].Metadata.Name != "daily" || list[1].Metadata.Name != "weekly" || !list[1].Spec.Suspend {
			t.Fatalf("ListTriggers = %v, %v", list, err)
		}
		slot := time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)
		if _, created, err := s.RecordFire(bg, slotFire("weekly", slot), "", nil); err != nil || !created {
			t.Fatalf("RecordFire: created=%v %v", created, err)
		}
		if err := s.DeleteTrigger(bg, "weekly"); err != nil {
			t.Fatalf("DeleteTrigger: %v", err)
		}
		wantErr(t, "second DeleteTrigger", s.DeleteTrigger(bg, "weekly"), store.ErrNotFound)
		_, err = s.GetTrigger(bg, "weekly")
		wantErr(t, "GetTrigger after delete", err, store.ErrNotFound)
		// A trigger made again under the name starts with no fires: its slots are its own.
		mustCreateTriggerNamed(t, s, "weekly")
		if fires, err := s.ListFires(bg, "weekly", 0); err != nil || len(fires) != 0 {
			t.Errorf("fires after delete and create = %v, %v", fires, err)
		}
		_, _, err = s.RecordFire(bg, slotFire("gone", slot), "", nil)
		wantErr(t, "RecordFire of a missing trigger", err, store.ErrNotFound)
	})

	t.Run("OnceWithItsRun", func(t *testing.T) {
		s := open(t)
		mustCreateAgent(t, s, "agent-a")
		mustCreateTriggerNamed(t, s, "weekly")
		slot := time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)
		rec, created, err := s.RecordFire(bg, slotFire("weekly", slot), api.ConcurrencyAllow, triggerRun("weekly-1"))
		if err != nil || !created || rec.Run != "weekly-1" || rec.Outcome != api.FireStarted || rec.Time.IsZero() {
			t.Fatalf("first RecordFire = %+v created=%v %v", rec, created, err)
		}
		// The run exists, with its cap and the trigger's label, and is claimable.
		r := mustGetRun(t, s, "weekly-1")
		if r.Spec.MaxCostUSD != "0.50" || r.Metadata.Labels[api.LabelTrigger] != "weekly" {
			t.Errorf("the fire's run = %+v", r)
		}
		mustClaim(t, s, newOwner("r"), "weekly-1", longTTL)
		// The same slot again, with another run: nothing new, the first record comes back.
		rec2, created, err := s.RecordFire(bg, slotFire("weekly", slot), api.ConcurrencyAllow, triggerRun("weekly-2"))
		if err != nil || created || rec2.Run != "weekly-1" || rec2.Key != rec.Key {
			t.Fatalf("second RecordFire = %+v created=%v %v", rec2, created, err)
		}
		if _, err := s.GetRun(bg, "weekly-2"); !errIs(err, store.ErrNotFound) {
			t.Errorf("a repeated slot made a run: %v", err)
		}
		fires, err := s.ListFires(bg, "weekly", 0)
		if err != nil || len(fires) != 1 || fires[0].RunPhase != string(api.PhaseQueued) || fires[0].CostUSD != "0.00" || fires[0].ScheduledTime == nil || !fires[0].ScheduledTime.Equal(slot) {
			t.Fatalf("ListFires = %+v, %v", fires, err)
		}
		last, ok, err := s.LastSlot(bg, "weekly")
		if err != nil || !ok || !last.Equal(slot) {
			t.Errorf("LastSlot = %v %v %v, want %v", last, ok, err, slot)
		}
		if _, ok, err := s.LastSlot(bg, "other"); err != nil || ok {
			t.Errorf("LastSlot of a trigger without fires = %v %v", ok, err)
		}
		// A run that cannot be made (its name is taken) records nothing: the caller records the
		// failure itself.
		_, _, err = s.RecordFire(bg, api.TriggerFire{Trigger: "weekly", Key: "manual:x", Source: api.FireSourceManual}, api.ConcurrencyAllow, triggerRun("weekly-1"))
		wantErr(t, "RecordFire with a taken run name", err, store.ErrAlreadyExists)
		if fires, _ := s.ListFires(bg, "weekly", 0); len(fires) != 1 {
			t.Errorf("a failed RecordFire left a record: %+v", fires)
		}
	})

	t.Run("ForbidAndReplace", func(t *testing.T) {
		s := open(t)
		mustCreateAgent(t, s, "agent-a")
		mustCreateTriggerNamed(t, s, "f")
		fire := func(key string, concurrency api.Concurrency, run string) api.TriggerFire {
			t.Helper()
			rec, created, err := s.RecordFire(bg, api.TriggerFire{Trigger: "f", Key: key, Source: api.FireSourceManual}, concurrency, triggerRun(run))
			if err != nil || !created {
				t.Fatalf("RecordFire(%s): created=%v %v", key, created, err)
			}
			return rec
		}
		if rec := fire("k1", api.ConcurrencyForbid, "f-1"); rec.Outcome != api.FireStarted || rec.Run != "f-1" {
			t.Fatalf("first fire = %+v", rec)
		}
		// Forbid while f-1 is unfinished: skipped, no run.
		if rec := fire("k2", api.ConcurrencyForbid, "f-2"); rec.Outcome != api.FireSkipped || rec.Run != "" || rec.Message == "" {
			t.Fatalf("Forbid with the last run unfinished = %+v", rec)
		}
		if _, err := s.GetRun(bg, "f-2"); !errIs(err, store.ErrNotFound) {
			t.Errorf("a skipped fire made its run: %v", err)
		}
		finishRun(t, s, "f-1")
		if rec := fire("k3", api.ConcurrencyForbid, "f-3"); rec.Outcome != api.FireStarted || rec.Run != "f-3" {
			t.Fatalf("Forbid with the last run finished = %+v", rec)
		}
		// Replace while f-3 is unfinished: f-4 starts and f-3 is asked to cancel.
		if rec := fire("k4", api.ConcurrencyReplace, "f-4"); rec.Outcome != api.FireReplaced || rec.Run != "f-4" {
			t.Fatalf("Replace = %+v", rec)
		}
		if r := mustGetRun(t, s, "f-3"); !r.Status.CancelRequested {
			t.Errorf("Replace left the last run without a cancel request: %+v", r.Status)
		}
		if r := mustGetRun(t, s, "f-4"); r.Status.CancelRequested {
			t.Errorf("Replace cancelled the new run")
		}
		// Allow starts whatever runs.
		if rec := fire("k5", api.ConcurrencyAllow, "f-5"); rec.Outcome != api.FireStarted {
			t.Fatalf("Allow = %+v", rec)
		}
		fires, err := s.ListFires(bg, "f", 2)
		if err != nil || len(fires) != 2 || fires[0].Key != "k5" || fires[1].Key != "k4" {
			t.Fatalf("ListFires(limit 2) = %+v, %v", fires, err)
		}
	})

	t.Run("ConcurrentFiresOfOneSlot", func(t *testing.T) {
		s := open(t)
		mustCreateAgent(t, s, "agent-a")
		mustCreateTriggerNamed(t, s, "hot")
		slot := time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)
		const n = 8
		var wg sync.WaitGroup
		created := make([]bool, n)
		runs := make([]string, n)
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rec, c, err := s.RecordFire(bg, slotFire("hot", slot), api.ConcurrencyAllow, triggerRun(fmt.Sprintf("hot-%d", i)))
				created[i], runs[i], errs[i] = c, rec.Run, err
			}()
		}
		wg.Wait()
		nCreated := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("RecordFire %d: %v", i, errs[i])
			}
			if created[i] {
				nCreated++
			}
		}
		if nCreated != 1 {
			t.Fatalf("%d of %d concurrent fires of one slot were recorded, want 1", nCreated, n)
		}
		for i := range n {
			if runs[i] != runs[0] {
				t.Errorf("fire %d reports run %q, fire 0 %q", i, runs[i], runs[0])
			}
		}
		all, err := s.ListRuns(bg, store.RunFilter{})
		if err != nil || len(all) != 1 {
			t.Fatalf("runs after %d concurrent fires of one slot: %d (%v)", n, len(all), err)
		}
	})
}

func mustCreateTriggerNamed(t *testing.T, s store.Store, name string) {
	t.Helper()
	if err := s.CreateTrigger(bg, newTrigger(name)); err != nil {
		t.Fatalf("CreateTrigger(%q): %v", name, err)
	}
}

func triggerRun(name string) *api.AgentRun {
	r := newRun(name, "agent-a")
	r.Spec.MaxCostUSD = "0.50"
	r.Metadata.Labels = map[string]string{api.LabelTrigger: "weekly"}
	r.Status.Cost = &api.RunCost{TotalUSD: "0.00", LimitUSD: "0.50", Billing: "credits"}
	return r
}
