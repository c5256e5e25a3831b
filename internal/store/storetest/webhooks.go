package storetest

import (
	"sync"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

func newWebhook(name string, events []string, agents ...string) *api.Webhook {
	return &api.Webhook{
		TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "Webhook"},
		Metadata: api.ObjectMeta{Name: name},
		Spec:     api.WebhookSpec{URL: "https://hooks.example.com/" + name, Events: events, Agents: agents, SecretRef: name + "-secret"},
	}
}

// deliveriesOf lists a webhook's deliveries, oldest first.
func deliveriesOf(t *testing.T, s store.Store, webhook string) []api.WebhookDelivery {
	t.Helper()
	ds, err := s.ListDeliveries(bg, webhook, 0)
	if err != nil {
		t.Fatalf("ListDeliveries(%s): %v", webhook, err)
	}
	for i, j := 0, len(ds)-1; i < j; i, j = i+1, j-1 {
		ds[i], ds[j] = ds[j], ds[i]
	}
	return ds
}

func typesOf(ds []api.WebhookDelivery) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Type)
	}
	return out
}

// park commits the run waiting on reason at step key, with its timeline event, and releases it.
func park(t *testing.T, s store.Store, l store.Lease, reason api.Reason, key string, wakeAt *time.Time) {
	t.Helper()
	st := mustGetRun(t, s, l.Run).Status
	st.Phase, st.Reason = api.PhaseWaiting, reason
	st.WaitingOn = &api.WaitingOn{Kind: "approval", StepKey: key}
	typ := api.EventRunWaiting
	if reason == api.ReasonApproval {
		typ = api.EventRunApproval
	}
	mustCommit(t, s, l, store.Write{Status: &st, Events: []api.Event{ev(typ, "waits")}, Release: true, WakeAt: wakeAt})
}

func testWebhooks(t *testing.T, open opener) {
	t.Run("CRUD", func(t *testing.T) {
		s := open(t)
		w := newWebhook("ops", []string{api.WebhookRunFailed})
		if err := s.CreateWebhook(bg, w); err != nil {
			t.Fatalf("CreateWebhook: %v", err)
		}
		if w.Metadata.UID == "" || w.Metadata.ResourceVersion != "1" || w.Metadata.Generation != 1 {
			t.Errorf("created metadata %+v", w.Metadata)
		}
		wantErr(t, "second CreateWebhook", s.CreateWebhook(bg, newWebhook("ops", []string{api.WebhookRunFailed})), store.ErrAlreadyExists)
		up := newWebhook("ops", []string{api.WebhookRunFailed, api.WebhookRunSucceeded})
		up.Metadata.ResourceVersion = "1"
		if err := s.UpdateWebhook(bg, up); err != nil {
			t.Fatalf("UpdateWebhook: %v", err)
		}
		if up.Metadata.Generation != 2 || up.Metadata.ResourceVersion != "2" {
			t.Errorf("updated metadata %+v", up.Metadata)
		}
		stale := newWebhook("ops", []string{api.WebhookRunFailed})
		stale.Metadata.ResourceVersion = "1"
		wantErr(t, "stale UpdateWebhook", s.UpdateWebhook(bg, stale), store.ErrConflict)
		got, err := s.GetWebhook(bg, "ops")
		if err != nil || !sameValue(got.Spec, up.Spec) || got.Kind != "Webhook" {
			t.Fatalf("GetWebhook = %+v, %v", got, err)
		}
		list, err := s.ListWebhooks(bg)
		if err != nil || len(list) != 1 {
			t.Fatalf("ListWebhooks = %d, %v", len(list), err)
		}
		if err := s.DeleteWebhook(bg, "ops"); err != nil {
			t.Fatalf("DeleteWebhook: %v", err)
		}
		wantErr(t, "GetWebhook after delete", func() error { _, err := s.GetWebhook(bg, "ops"); return err }(), store.ErrNotFound)
		wantErr(t, "second DeleteWebhook", s.DeleteWebhook(bg, "ops"), store.ErrNotFound)
	})

	// The outbox: the commit that finishes or parks a run writes its deliveries, one per
	// subscribed webhook, matched on event and agent.
	t.Run("OutboxWithTheCommit", func(t *testing.T) {
		s := open(t)
		all := []string{api.WebhookRunSucceeded, api.WebhookRunFailed, api.WebhookRunWaiting, api.WebhookApprovalRequested}
		for _, w := range []*api.Webhook{
			newWebhook("every", all),
			newWebhook("only-b", all, "agent-b"),
			newWebhook("failures", []string{api.WebhookRunFailed}),
		} {
			if err := s.CreateWebhook(bg, w); err != nil {
				t.Fatal(err)
			}
		}
		mustCreateRun(t, s, "r1")
		l := mustClaim(t, s, newOwner("runner"), "r1", longTTL)
		// A step commit reports nothing.
		mustCommit(t, s, l, store.Write{Steps: []api.Step{startedStep("t0/model", 1)}, Events: []api.Event{ev(api.EventStepStarted, "model")}})
		if ds := deliveriesOf(t, s, "every"); len(ds) != 0 {
			t.Fatalf("deliveries after a step: %v", typesOf(ds))
		}
		park(t, s, l, api.ReasonApproval, "t0/tool/0/approval", nil)
		ds := deliveriesOf(t, s, "every")
		if got := typesOf(ds); !sameValue(got, []string{api.WebhookRunWaiting, api.WebhookApprovalRequested}) {
			t.Fatalf("deliveries after an approval park: %v", got)
		}
		for _, d := range ds {
			if d.Run != "r1" || d.Agent != "agent-a" || d.State != api.DeliveryPending || d.ID == "" || d.Attempts != 0 {
				t.Errorf("delivery %+v", d)
			}
		}
		if ds[0].ID == ds[1].ID {
			t.Errorf("two events share webhook-id %s", ds[0].ID)
		}
		if ds := deliveriesOf(t, s, "only-b"); len(ds) != 0 {
			t.Errorf("a webhook for agent-b got agent-a's events: %v", typesOf(ds))
		}
		// Something arrives; the run goes on and fails.
		if _, _, err := s.AddMessage(bg, "r1", "", "go on"); err != nil {
			t.Fatalf("AddMessage: %v", err)
		}
		l = eventuallyClaim(t, s, newOwner("runner"), "r1", longTTL)
		st := mustGetRun(t, s, "r1").Status
		st.Phase, st.Reason, st.WaitingOn = api.PhaseFailed, api.ReasonToolError, nil
		mustCommit(t, s, l, store.Write{Status: &st, Events: []api.Event{ev(api.EventRunFailed, "failed")}, Release: true})
		if got := typesOf(deliveriesOf(t, s, "every")); !sameValue(got, []string{api.WebhookRunWaiting, api.WebhookApprovalRequested, api.WebhookRunFailed}) {
			t.Errorf("every's deliveries: %v", got)
		}
		if got := typesOf(deliveriesOf(t, s, "failures")); !sameValue(got, []string{api.WebhookRunFailed}) {
			t.Errorf("failures' deliveries: %v", got)
		}
	})

	t.Run("OnePerWait", func(t *testing.T) {
		s := open(t)
		if err := s.CreateWebhook(bg, newWebhook("w", []string{api.WebhookRunWaiting})); err != nil {
			t.Fatal(err)
		}
		mustCreateRun(t, s, "r1")
		l := mustClaim(t, s, newOwner("runner"), "r1", longTTL)
		// The credits recheck: the run wakes by its timer, looks again and parks again.
		now := time.Now()
		park(t, s, l, api.ReasonCredits, "t0/model", &now)
		l = eventuallyClaim(t, s, newOwner("runner"), "r1", longTTL)
		park(t, s, l, api.ReasonCredits, "t0/model", nil)
		if got := typesOf(deliveriesOf(t, s, "w")); len(got) != 1 {
			t.Errorf("a run parked twice on one wait made %d deliveries, want 1", len(got))
		}
		// A person acts (credits added) and the run waits again: a new wait, a new delivery.
		if _, err := s.AddCredits(bg, 1, "test"); err != nil {
			t.Fatal(err)
		}
		l = eventuallyClaim(t, s, newOwner("runner"), "r1", longTTL)
		park(t, s, l, api.ReasonCredits, "t0/model", nil)
		if got := typesOf(deliveriesOf(t, s, "w")); len(got) != 2 {
			t.Errorf("a run waiting again after a poke made %d deliveries in all, want 2", len(got))
		}
	})

	t.Run("FencedWriteReportsNothing", func(t *testing.T) {
		s := open(t)
		if err := s.CreateWebhook(bg, newWebhook("w", []string{api.WebhookRunSucceeded})); err != nil {
			t.Fatal(err)
		}
		mustCreateRun(t, s, "r1")
		stale := mustClaim(t, s, newOwner("a"), "r1", shortTTL)
		time.Sleep(2 * shortTTL)
		eventuallyClaim(t, s, newOwner("b"), "r1", longTTL)
		st := mustGetRun(t, s, "r1").Status
		st.Phase, st.Reason = api.PhaseSucceeded, api.ReasonCompleted
		_, err := s.Commit(bg, stale, store.Write{Status: &st, Events: []api.Event{ev(api.EventRunSucceeded, "done")}, Release: true})
		wantErr(t, "stale Commit", err, store.ErrFenced)
		if ds := deliveriesOf(t, s, "w"); len(ds) != 0 {
			t.Errorf("a fenced commit made deliveries: %v", typesOf(ds))
		}
	})

	t.Run("TriggerFailed", func(t *testing.T) {
		s := open(t)
		if err := s.CreateWebhook(bg, newWebhook("w", []string{api.WebhookTriggerFailed}, "agent-a")); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateTrigger(bg, newTrigger("weekly")); err != nil {
			t.Fatal(err)
		}
		f := slotFire("weekly", time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC))
		f.Outcome, f.Message = api.FireFailed, "agent agent-a is stopped"
		for range 2 {
			if _, _, err := s.RecordFire(bg, f, api.ConcurrencyAllow, nil); err != nil {
				t.Fatalf("RecordFire: %v", err)
			}
		}
		ds := deliveriesOf(t, s, "w")
		if len(ds) != 1 || ds[0].Type != api.WebhookTriggerFailed || ds[0].Trigger != "weekly" || ds[0].Agent != "agent-a" {
			t.Fatalf("deliveries %+v", ds)
		}
	})

	// Claims, attempts and the history; two claimers never hold one delivery.
	t.Run("ClaimAndFinish", func(t *testing.T) {
		s := open(t)
		if err := s.CreateWebhook(bg, newWebhook("w", []string{api.WebhookRunSucceeded})); err != nil {
			t.Fatal(err)
		}
		d0, err := s.EnqueueDelivery(bg, "w", store.OutboxEvent{ID: store.NewDeliveryID(), Type: api.WebhookTest, Key: "test:1", Time: time.Now(), Data: []byte(`{"test":true}`)})
		if err != nil {
			t.Fatalf("EnqueueDelivery: %v", err)
		}
		_, err = s.EnqueueDelivery(bg, "nope", store.OutboxEvent{ID: store.NewDeliveryID(), Type: api.WebhookTest, Key: "test:2", Time: time.Now(), Data: []byte(`{}`)})
		wantErr(t, "EnqueueDelivery to no webhook", err, store.ErrNotFound)
		a, b := newOwner("server"), newOwner("server")
		got, err := s.ClaimDeliveries(bg, a, 10, longTTL)
		if err != nil || len(got) != 1 || got[0].ID != d0.ID || string(got[0].Data) != `{"test":true}` {
			t.Fatalf("ClaimDeliveries = %+v, %v", got, err)
		}
		if other, err := s.ClaimDeliveries(bg, b, 10, longTTL); err != nil || len(other) != 0 {
			t.Fatalf("a second claimer got %+v, %v", other, err)
		}
		if ok, err := s.FinishAttempt(bg, b, got[0], api.WebhookAttempt{Attempt: 1, Time: time.Now(), Delivered: true}, nil); err != nil || ok {
			t.Fatalf("FinishAttempt by a non-holder = %v, %v", ok, err)
		}
		next := time.Now().Add(-time.Second)
		if ok, err := s.FinishAttempt(bg, a, got[0], api.WebhookAttempt{Attempt: 1, Time: time.Now(), StatusCode: 503, Error: "503 Service Unavailable", DurationMS: 12}, &next); err != nil || !ok {
			t.Fatalf("FinishAttempt = %v, %v", ok, err)
		}
		again, err := s.ClaimDeliveries(bg, b, 10, longTTL)
		if err != nil || len(again) != 1 || again[0].ID != d0.ID || again[0].Attempts != 1 {
			t.Fatalf("reclaim = %+v, %v", again, err)
		}
		if ok, err := s.FinishAttempt(bg, b, again[0], api.WebhookAttempt{Attempt: 2, Time: time.Now(), StatusCode: 204, Delivered: true, DurationMS: 3}, nil); err != nil || !ok {
			t.Fatalf("FinishAttempt delivered = %v, %v", ok, err)
		}
		ds := deliveriesOf(t, s, "w")
		if len(ds) != 1 || ds[0].State != api.DeliveryDelivered || ds[0].Attempts != 2 || len(ds[0].History) != 2 ||
			ds[0].History[0].StatusCode != 503 || ds[0].History[0].Error == "" || !ds[0].History[1].Delivered || ds[0].NextAttempt != nil {
			t.Fatalf("history %+v", ds)
		}
		if more, _ := s.ClaimDeliveries(bg, a, 10, longTTL); len(more) != 0 {
			t.Errorf("a delivered delivery was claimed again")
		}
		if n, err := s.PruneDeliveries(bg, time.Now().Add(-time.Hour), 100); err != nil || n != 0 {
			t.Errorf("PruneDeliveries of nothing old = %d, %v", n, err)
		}
		if n, err := s.PruneDeliveries(bg, time.Now().Add(time.Hour), 100); err != nil || n != 1 {
			t.Errorf("PruneDeliveries = %d, %v", n, err)
		}
		if ds := deliveriesOf(t, s, "w"); len(ds) != 0 {
			t.Errorf("after prune: %+v", ds)
		}
	})

	t.Run("ExpiredLeaseIsClaimedAgain", func(t *testing.T) {
		s := open(t)
		if err := s.CreateWebhook(bg, newWebhook("w", []string{api.WebhookRunSucceeded})); err != nil {
			t.Fatal(err)
		}
		if _, err := s.EnqueueDelivery(bg, "w", store.OutboxEvent{ID: store.NewDeliveryID(), Type: api.WebhookTest, Key: "k", Time: time.Now(), Data: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
		first, err := s.ClaimDeliveries(bg, newOwner("dead"), 10, shortTTL)
		if err != nil || len(first) != 1 {
			t.Fatalf("claim: %+v, %v", first, err)
		}
		deadline := time.Now().Add(patience)
		for {
			got, err := s.ClaimDeliveries(bg, newOwner("alive"), 10, longTTL)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 1 && got[0].ID == first[0].ID {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("a delivery whose claim ran out was not claimed again")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})

	// Many claimers at once: each delivery goes to exactly one.
	t.Run("ConcurrentClaims", func(t *testing.T) {
		s := open(t)
		if err := s.CreateWebhook(bg, newWebhook("w", []string{api.WebhookRunSucceeded})); err != nil {
			t.Fatal(err)
		}
		const n = 40
		for i := range n {
			if _, err := s.EnqueueDelivery(bg, "w", store.OutboxEvent{ID: store.NewDeliveryID(), Type: api.WebhookTest, Key: "k" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Time: time.Now(), Data: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
		}
		var mu sync.Mutex
		seen := map[string]int{}
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				owner := newOwner("server")
				for {
					got, err := s.ClaimDeliveries(bg, owner, 3, longTTL)
					if err != nil {
						t.Error(err)
						return
					}
					if len(got) == 0 {
						return
					}
					for _, d := range got {
						mu.Lock()
						seen[d.ID]++
						mu.Unlock()
						if _, err := s.FinishAttempt(bg, owner, d, api.WebhookAttempt{Attempt: 1, Time: time.Now(), Delivered: true}, nil); err != nil {
							t.Error(err)
						}
					}
				}
			}()
		}
		wg.Wait()
		if len(seen) != n {
			t.Errorf("%d deliveries claimed, want %d", len(seen), n)
		}
		for id, c := range seen {
			if c != 1 {
				t.Errorf("delivery %s claimed %d times", id, c)
			}
		}
	})
}
