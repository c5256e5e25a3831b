package auth

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"agentrun.dev/agentrun/internal/metrics"
)

// Sign-in is guarded three ways, because each argon2id check takes 64 MiB and ~0.2 s of CPU:
//   - at most MaxChecks hashes run at once (a semaphore); MaxWaiting more may wait for one, with
//     their request's context; beyond that a sign-in is refused with ErrBusy at once;
//   - each client address has a token bucket of attempts (any user name, the setup code included);
//   - each address+user pair gets a lockout after FreeFailures wrong passwords that doubles with each
//     further failure, up to MaxLockout, and decays by one failure per Decay without one. It is
//     per address+user so that an attacker elsewhere can never lock the owner out.
//
// There is deliberately no per-user limit across addresses: it would let anyone lock the owner
// out. The semaphore bounds guessing across all addresses to MaxChecks hashes at a time.

// Limits are the sign-in bounds; a zero field takes its default.
type Limits struct {
	MaxChecks    int           // argon2id hashes at once (default 2: 128 MiB)
	MaxWaiting   int           // sign-ins waiting for a hash slot (default 16)
	Burst        int           // attempts an address may make at once (default 10)
	Refill       time.Duration // one more attempt per Refill (default 6 s: 10 a minute)
	FreeFailures int           // wrong passwords per address+user before a lockout (default 5)
	MaxLockout   time.Duration // the longest lockout (default 15 min)
	Decay        time.Duration // one failure is forgotten per Decay without one (default 5 min)
	MaxTracked   int           // addresses and pairs remembered at most (default 10000)
}

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defd := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxChecks, 2)
	def(&l.MaxWaiting, 16)
	def(&l.Burst, 10)
	defd(&l.Refill, 6*time.Second)
	def(&l.FreeFailures, 5)
	defd(&l.MaxLockout, 15*time.Minute)
	defd(&l.Decay, 5*time.Minute)
	def(&l.MaxTracked, 10000)
	return l
}

// LimitError refuses a sign-in before any password is checked: RateLimited (this address, or this
// address and user, tried too often) or Busy (too many sign-ins are waiting for a check).
type LimitError struct {
	Busy       bool
	RetryAfter time.Duration
}

func (e *LimitError) Error() string {
	secs := int(e.RetryAfter.Round(time.Second) / time.Second)
	if secs < 1 {
		secs = 1
	}
	if e.Busy {
		return fmt.Sprintf("too many sign-ins are being checked right now: try again in %d s", secs)
	}
	return fmt.Sprintf("too many sign-in attempts from this address: try again in %d s", secs)
}

var (
	passwordHashes = metrics.Default.NewCounter("agentrun_password_hashes_total",
		"argon2id computations (sign-ins of known and unknown users alike, and password setting).")
	checksInFlight = metrics.Default.NewGauge("agentrun_password_checks_in_flight",
		"argon2id computations running now.")
	checksInFlightMax = metrics.Default.NewGauge("agentrun_password_checks_in_flight_max",
		"The most argon2id computations that ran at once since the process started.")
	signInsRefused = metrics.Default.NewCounter("agentrun_signins_refused_total",
		"Sign-ins refused before any check, by why (rate_limited, busy).", "why")
)

func init() {
	passwordHashes.Add(0)
	checksInFlight.Set(0)
	checksInFlightMax.Set(0)
}

// guard holds the sign-in bounds' state. Its maps are pruned as they are used; no goroutine.
type guard struct {
	lim     Limits
	slots   chan struct{}
	mu      sync.Mutex
	waiting int
	running int
	maxRun  int
	hashes  int                 // computations begun (the metric is process-wide; this is per guard)
	buckets map[string]*bucket  // by address
	fails   map[string]*failure // by address + "\x00" + user
}

type bucket struct {
	tokens float64
	at     time.Time
}

type failure struct {
	n    int
	last time.Time
}

func newGuard(l Limits) *guard {
	l = l.withDefaults()
	return &guard{lim: l, slots: make(chan struct{}, l.MaxChecks), buckets: map[string]*bucket{}, fails: map[string]*failure{}}
}

// hashSlot waits for a slot to run one argon2id computation and returns its release. It waits at
// most as long as ctx; when MaxWaiting others already wait it refuses at once.
func (g *guard) hashSlot(ctx context.Context) (func(), error) {
	g.mu.Lock()
	if g.waiting >= g.lim.MaxWaiting {
		g.mu.Unlock()
		signInsRefused.Inc("busy")
		return nil, &LimitError{Busy: true, RetryAfter: time.Second}
	}
	g.waiting++
	g.mu.Unlock()
	select {
	case g.slots <- struct{}{}:
	case <-ctx.Done():
		g.mu.Lock()
		g.waiting--
		g.mu.Unlock()
		return nil, fmt.Errorf("waiting for a password check: %w", ctx.Err())
	}
	g.mu.Lock()
	g.waiting--
	g.running++
	if g.running > g.maxRun {
		g.maxRun = g.running
		checksInFlightMax.Set(float64(g.maxRun))
	}
	checksInFlight.Set(float64(g.running))
	g.hashes++
	g.mu.Unlock()
	passwordHashes.Inc()
	return func() {
		g.mu.Lock()
		g.running--
		checksInFlight.Set(float64(g.running))
		g.mu.Unlock()
		<-g.slots
	}, nil
}

// admit charges one attempt to addr and refuses it when addr's bucket is empty or addr+user is
// locked out.
func (g *guard) admit(addr, user string, now time.Time) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.prune(now)
	if f := g.fails[addr+"\x00"+user]; f != nil {
		g.decay(f, now)
		if until := f.last.Add(g.lockout(f.n)); now.Before(until) {
			signInsRefused.Inc("rate_limited")
			return &LimitError{RetryAfter: until.Sub(now)}
		}
	}
	b := g.buckets[addr]
	if b == nil {
		b = &bucket{tokens: float64(g.lim.Burst), at: now}
		g.buckets[addr] = b
	}
	b.tokens = min(float64(g.lim.Burst), b.tokens+float64(now.Sub(b.at))/float64(g.lim.Refill))
	b.at = now
	if b.tokens < 1 {
		signInsRefused.Inc("rate_limited")
		return &LimitError{RetryAfter: time.Duration((1 - b.tokens) * float64(g.lim.Refill))}
	}
	b.tokens--
	return nil
}

// result records how an admitted attempt ended: a failure counts toward addr+user's lockout, a
// success forgets its failures.
func (g *guard) result(addr, user string, ok bool, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	k := addr + "\x00" + user
	if ok {
		delete(g.fails, k)
		return
	}
	f := g.fails[k]
	if f == nil {
		f = &failure{}
		g.fails[k] = f
	}
	g.decay(f, now)
	f.n++
	f.last = now
}

// lockout is how long after its last failure a pair with n failures waits: nothing for the first
// FreeFailures, then 1 s doubling with each failure, at most MaxLockout.
func (g *guard) lockout(n int) time.Duration {
	over := n - g.lim.FreeFailures
	if over <= 0 {
		return 0
	}
	d := time.Second
	for i := 1; i < over && d < g.lim.MaxLockout; i++ {
		d *= 2
	}
	return min(d, g.lim.MaxLockout)
}

func (g *guard) decay(f *failure, now time.Time) {
	if f.n == 0 {
		return
	}
	if steps := int(now.Sub(f.last) / g.lim.Decay); steps > 0 {
		f.n = max(0, f.n-steps)
		f.last = f.last.Add(time.Duration(steps) * g.lim.Decay)
	}
}

// prune forgets full buckets and decayed failures once the maps hold MaxTracked entries, and, if
// that is not enough (an attacker with many addresses), the whole map: forgetting errs toward
// letting attempts through, which the hash semaphore still bounds.
func (g *guard) prune(now time.Time) {
	if len(g.buckets) >= g.lim.MaxTracked {
		for k, b := range g.buckets {
			if b.tokens+float64(now.Sub(b.at))/float64(g.lim.Refill) >= float64(g.lim.Burst) {
				delete(g.buckets, k)
			}
		}
		if len(g.buckets) >= g.lim.MaxTracked {
			clear(g.buckets)
		}
	}
	if len(g.fails) >= g.lim.MaxTracked {
		for k, f := range g.fails {
			if g.decay(f, now); f.n == 0 {
				delete(g.fails, k)
			}
		}
		if len(g.fails) >= g.lim.MaxTracked {
			clear(g.fails)
		}
	}
}

// ClientAddr is the address sign-in limits are kept for: the connection's peer, or, when the
// server is told to trust its proxy, the last address the proxy appended to X-Forwarded-For. An
// IPv6 address counts by its /64, which one client usually holds whole.
func ClientAddr(r *http.Request, trustProxy bool) string {
	host := r.RemoteAddr
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if trustProxy {
		if xff := r.Header.Values("X-Forwarded-For"); len(xff) > 0 {
			parts := strings.Split(xff[len(xff)-1], ",")
			if last := strings.TrimSpace(parts[len(parts)-1]); last != "" {
				host = last
			}
		}
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return host
	}
	if ip.To4() == nil {
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return ip.String()
}

// SecureRequest reports whether the request reached the server over TLS: its own, or, when the
// server is told to trust its proxy, the proxy's (X-Forwarded-Proto: https).
func SecureRequest(r *http.Request, trustProxy bool) bool {
	if r.TLS != nil {
		return true
	}
	return trustProxy && strings.EqualFold(strings.TrimSpace(r.Header.Get("X-Forwarded-Proto")), "https")
}
