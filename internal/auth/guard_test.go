package auth

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// The bounds on sign-in, decided on a clock the test moves: no sleeps, no timing.
func TestGuardLockoutIsPerAddressAndUserAndDecays(t *testing.T) {
	t.Parallel()
	g := newGuard(Limits{Burst: 100, FreeFailures: 3, MaxLockout: 8 * time.Second, Decay: time.Minute})
	now := time.Unix(1000, 0)
	for i := 0; i < 3; i++ {
		if err := g.admit("10.0.0.1", "admin", now); err != nil {
			t.Fatalf("attempt %d refused: %v", i, err)
		}
		g.result("10.0.0.1", "admin", false, now)
	}
	// The 4th failure locks the pair for 1 s, the 5th for 2 s, doubling up to MaxLockout.
	g.admit("10.0.0.1", "admin", now)
	g.result("10.0.0.1", "admin", false, now)
	var le *LimitError
	if err := g.admit("10.0.0.1", "admin", now); !errors.As(err, &le) || le.Busy || le.RetryAfter != time.Second {
		t.Fatalf("after 4 failures: %v", err)
	}
	// Another address, or another user from the same address, is not locked out.
	if err := g.admit("10.0.0.2", "admin", now); err != nil {
		t.Errorf("the owner at another address is locked out: %v", err)
	}
	if err := g.admit("10.0.0.1", "bob", now); err != nil {
		t.Errorf("another user is locked out: %v", err)
	}
	for i := 0; i < 10; i++ {
		now = now.Add(le.RetryAfter)
		if err := g.admit("10.0.0.1", "admin", now); err != nil {
			t.Fatalf("refused after its lockout ended: %v", err)
		}
		g.result("10.0.0.1", "admin", false, now)
		g.admit("10.0.0.1", "admin", now)
		var l2 *LimitError
		if err := g.admit("10.0.0.1", "admin", now); !errors.As(err, &l2) {
			t.Fatalf("failure %d did not lock out", i+5)
		}
		le = l2
	}
	if le.RetryAfter != 8*time.Second {
		t.Errorf("lockout grew to %v, want MaxLockout 8s", le.RetryAfter)
	}
	// Failures decay: after enough quiet minutes the pair is free again, and one more failure
	// does not lock it (it is within FreeFailures again).
	now = now.Add(20 * time.Minute)
	if err := g.admit("10.0.0.1", "admin", now); err != nil {
		t.Fatalf("still locked out after 20 quiet minutes: %v", err)
	}
	g.result("10.0.0.1", "admin", false, now)
	if err := g.admit("10.0.0.1", "admin", now); err != nil {
		t.Errorf("locked out again by one failure after the decay: %v", err)
	}
	// A success forgets the failures.
	g.result("10.0.0.1", "admin", true, now)
	if g.fails["10.0.0.1\x00admin"] != nil {
		t.Error("a success kept the failures")
	}
}

func TestGuardAddressBucket(t *testing.T) {
	t.Parallel()
	g := newGuard(Limits{Burst: 3, Refill: 10 * time.Second})
	now := time.Unix(1000, 0)
	for i := 0; i < 3; i++ {
		if err := g.admit("10.0.0.1", "user"+string(rune('a'+i)), now); err != nil {
			t.Fatalf("attempt %d: %v", i, err)
		}
	}
	var le *LimitError
	if err := g.admit("10.0.0.1", "other", now); !errors.As(err, &le) || le.RetryAfter != 10*time.Second {
		t.Fatalf("4th attempt from the address with any user: %v", err)
	}
	if err := g.admit("10.0.0.1", "other", now.Add(10*time.Second)); err != nil {
		t.Errorf("after a refill: %v", err)
	}
}

// At most MaxChecks hashes run at once; MaxWaiting more wait; the next is refused as busy; a
// waiter whose context ends leaves the queue.
func TestHashSlots(t *testing.T) {
	t.Parallel()
	g := newGuard(Limits{MaxChecks: 2, MaxWaiting: 2})
	ctx := context.Background()
	r1, err1 := g.hashSlot(ctx)
	r2, err2 := g.hashSlot(ctx)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	got := make(chan error, 2)
	for i := 0; i < 2; i++ {
		go func() {
			r, err := g.hashSlot(ctx)
			if err == nil {
				r()
			}
			got <- err
		}()
	}
	// Wait until both wait (state, not time).
	for {
		g.mu.Lock()
		w := g.waiting
		g.mu.Unlock()
		if w == 2 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	var le *LimitError
	if _, err := g.hashSlot(ctx); !errors.As(err, &le) || !le.Busy {
		t.Fatalf("a third waiter: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	// The queue is full, so even a cancelled caller is refused as busy rather than queued.
	if _, err := g.hashSlot(cctx); !errors.As(err, &le) {
		t.Fatalf("cancelled caller with a full queue: %v", err)
	}
	r1()
	r2()
	for i := 0; i < 2; i++ {
		if err := <-got; err != nil {
			t.Errorf("waiter: %v", err)
		}
	}
	if g.maxRun != 2 {
		t.Errorf("max in flight %d, want 2", g.maxRun)
	}
}

// Real argon2id, many at once: never more than MaxChecks in flight, and an unknown user costs a
// hash like a known one.
func TestChecksBoundedAndUnknownUsersHash(t *testing.T) {
	t.Parallel()
	a, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a.SetLimits(Limits{MaxChecks: 2, MaxWaiting: 100})
	if err := a.Setup(a.SetupCode(), "admin", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			user := "admin"
			if i%2 == 1 {
				user = "nobody"
			}
			if err := a.Check(user, "wrong password"); !errors.Is(err, ErrBadPassword) {
				t.Errorf("check %s: %v", user, err)
			}
		}()
	}
	wg.Wait()
	a.guard.mu.Lock()
	maxRun := a.guard.maxRun
	a.guard.mu.Unlock()
	if maxRun < 1 || maxRun > 2 {
		t.Errorf("%d hashes ran at once, want at most 2", maxRun)
	}
	// Each check hashed once, the unknown users' included, and setup once.
	a.guard.mu.Lock()
	hashes := a.guard.hashes
	a.guard.mu.Unlock()
	if hashes != 9 {
		t.Errorf("%d hashes for setup and 8 checks (4 of unknown users), want 9", hashes)
	}
}

func TestRevokeSession(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, _ := Open(dir)
	if err := a.Setup(a.SetupCode(), "ad|min", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s1, s2 := a.NewSession("ad|min", now), a.NewSession("ad|min", now)
	if u, ok := a.Verify(s1, now); !ok || u != "ad|min" {
		t.Fatalf("verify: %q %v", u, ok)
	}
	if err := a.Revoke(s1, now); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.Verify(s1, now); ok {
		t.Error("a revoked session still verifies")
	}
	if _, ok := a.Verify(s2, now); !ok {
		t.Error("revoking one session ended another")
	}
	if err := a.Revoke(s1, now); !errors.Is(err, ErrBadSession) {
		t.Errorf("revoking twice: %v", err)
	}
	b, _ := Open(dir)
	if _, ok := b.Verify(s1, now); ok {
		t.Error("a revoked session verifies after a restart")
	}
	if _, ok := b.Verify(s2, now); !ok {
		t.Error("a live session does not verify after a restart")
	}
}

func TestSetupFromIsRateLimited(t *testing.T) {
	t.Parallel()
	a, _ := Open(t.TempDir())
	a.SetLimits(Limits{Burst: 100, FreeFailures: 2})
	ctx := context.Background()
	var le *LimitError
	refused := false
	for i := 0; i < 5 && !refused; i++ {
		err := a.SetupFrom(ctx, "10.0.0.9", "WRONG", "admin", "correct horse battery")
		refused = errors.As(err, &le)
		if !refused && !errors.Is(err, ErrBadSetupCode) {
			t.Fatalf("attempt %d: %v", i, err)
		}
	}
	if !refused {
		t.Fatal("wrong setup codes were never limited")
	}
	if err := a.SetupFrom(ctx, "10.0.0.10", a.SetupCode(), "admin", "correct horse battery"); err != nil {
		t.Errorf("the right code from another address: %v", err)
	}
}
