package server

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"

	"agentrun.dev/agentrun/internal/api"
)

// HTTPOptions bound what one client can hold of the server: a request must arrive whole within
// ReadTimeout, a response (other than a stream, which extends its own deadline at each write) be
// taken within WriteTimeout, an idle keep-alive connection is closed after IdleTimeout, and at most
// MaxConns connections are open at once. A zero field takes its default.
type HTTPOptions struct {
	ReadHeaderTimeout time.Duration // default 10 s
	ReadTimeout       time.Duration // default 30 s, the body included
	WriteTimeout      time.Duration // default 2 min
	IdleTimeout       time.Duration // default 60 s
	MaxConns          int           // default 512
	// TrustProxy makes the server believe X-Forwarded-For (the client's address, for sign-in
	// limits) and X-Forwarded-Proto (https: session cookies are marked Secure). Set it only when
	// a proxy that sets both is the only way in.
	TrustProxy bool
}

func (o HTTPOptions) withDefaults() HTTPOptions {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.ReadHeaderTimeout, 10*time.Second)
	def(&o.ReadTimeout, 30*time.Second)
	def(&o.WriteTimeout, 2*time.Minute)
	def(&o.IdleTimeout, 60*time.Second)
	if o.MaxConns <= 0 {
		o.MaxConns = 512
	}
	o.ReadHeaderTimeout = min(o.ReadHeaderTimeout, o.ReadTimeout)
	return o
}

// Flags registers the options as flags of serve.
func (o *HTTPOptions) Flags(f *pflag.FlagSet) {
	f.DurationVar(&o.ReadTimeout, "read-timeout", 30*time.Second, "a request, body included, must arrive within this")
	f.DurationVar(&o.WriteTimeout, "write-timeout", 2*time.Minute, "a response must be taken within this (event streams excepted)")
	f.DurationVar(&o.IdleTimeout, "idle-timeout", 60*time.Second, "an idle keep-alive connection is closed after this")
	f.IntVar(&o.MaxConns, "max-connections", 512, "connections open at once; more wait (idle ones are closed to make room)")
	f.BoolVar(&o.TrustProxy, "trust-proxy", false, "believe X-Forwarded-For and X-Forwarded-Proto (only behind a proxy that sets them)")
}

// HTTPServer is an http.Server whose Serve bounds the connections it holds.
type HTTPServer struct {
	*http.Server
	maxConns int
	// full is set while Accept waits for a slot: a connection that turns idle then is closed at
	// once, so idle keep-alive connections cannot keep anyone out.
	full atomic.Bool
	mu   sync.Mutex
	idle map[net.Conn]time.Time
}

// NewHTTPServer makes the server for h with o's bounds.
func NewHTTPServer(h http.Handler, o HTTPOptions) *HTTPServer {
	o = o.withDefaults()
	s := &HTTPServer{maxConns: o.MaxConns, idle: map[net.Conn]time.Time{}}
	s.Server = &http.Server{Handler: h, ReadHeaderTimeout: o.ReadHeaderTimeout, ReadTimeout: o.ReadTimeout,
		WriteTimeout: o.WriteTimeout, IdleTimeout: o.IdleTimeout, ConnState: s.connState}
	return s
}

// Serve accepts connections on ln, at most maxConns open at once.
func (s *HTTPServer) Serve(ln net.Listener) error {
	return s.Server.Serve(&limitListener{Listener: ln, srv: s, slots: make(chan struct{}, s.maxConns), done: make(chan struct{})})
}

func (s *HTTPServer) connState(c net.Conn, st http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st == http.StateIdle {
		if s.full.Load() {
			c.Close()
			return
		}
		s.idle[c] = time.Now()
		return
	}
	delete(s.idle, c)
}

// closeOldestIdle closes the connection idle the longest, if any.
func (s *HTTPServer) closeOldestIdle() {
	s.mu.Lock()
	var oldest net.Conn
	var at time.Time
	for c, t := range s.idle {
		if oldest == nil || t.Before(at) {
			oldest, at = c, t
		}
	}
	delete(s.idle, oldest)
	s.mu.Unlock()
	if oldest != nil {
		oldest.Close()
	}
}

// limitListener hands out a connection only when one of its slots is free; the connection gives
// its slot back when closed. While it waits, further clients wait in the kernel's backlog.
type limitListener struct {
	net.Listener
	srv       *HTTPServer
	slots     chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	default:
		l.srv.full.Store(true)
		l.srv.closeOldestIdle()
		select {
		case l.slots <- struct{}{}:
			l.srv.full.Store(false)
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// streamWriteWindow is how long a stream's client may take to read one write (streams write at
// least a keepalive every 15 s).
const streamWriteWindow = time.Minute

// streamDeadlines exempts a streaming response from the server's ReadTimeout and WriteTimeout:
// the read deadline is cleared (its expiry would cancel the request's context) and the returned
// func pushes the write deadline streamWriteWindow ahead; call it before each write.
func streamDeadlines(w http.ResponseWriter) (extend func()) {
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Time{})
	extend = func() { rc.SetWriteDeadline(time.Now().Add(streamWriteWindow)) }
	extend()
	return extend
}

// defaultMaxFollowers bounds the event streams one credential (the API token, or one person's
// session) holds open at once.
const defaultMaxFollowers = 32

// followers counts the streams open per credential.
type followers struct {
	mu sync.Mutex
	n  map[string]int
}

// acquire takes a stream for the request's credential; ok is false when it holds max already.
func (f *followers) acquire(r *http.Request, max int) (release func(), ok bool) {
	if max <= 0 {
		max = defaultMaxFollowers
	}
	k := credentialKey(r)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil {
		f.n = map[string]int{}
	}
	if f.n[k] >= max {
		return nil, false
	}
	f.n[k]++
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.n[k]--; f.n[k] <= 0 {
				delete(f.n, k)
			}
		})
	}, true
}

// credentialKey names the credential a request carries (a digest, so no secret is kept): its
// bearer, else its console session cookie.
func credentialKey(r *http.Request) string {
	cred := r.Header.Get("Authorization")
	if cred == "" {
		if ck, err := r.Cookie("agentrun_session"); err == nil {
			cred = "cookie:" + ck.Value
		}
	}
	sum := sha256.Sum256([]byte(cred))
	return hex.EncodeToString(sum[:12])
}

// tooManyStreams answers a stream refused by the per-credential bound.
func tooManyStreams(w http.ResponseWriter, max int) {
	if max <= 0 {
		max = defaultMaxFollowers
	}
	w.Header().Set("Retry-After", "5")
	writeErr(w, api.Errorf(http.StatusTooManyRequests, api.CodeTooManyStreams, "", "this credential already follows %d event streams, the most it may: close one", max))
}
