// Package httpserve is the HTTP server every listener of agentrun uses (the API's, the model
// gateway's, a runner's and pprof's): the same bounds on how long a request may take to arrive,
// how long a connection may idle and how many connections are open at once, so that no client,
// signed in or not, can hold the process's descriptors.
package httpserve

import (
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"
)

// Options bound what one client can hold of the server: a request must arrive whole within
// ReadTimeout, a response (other than a stream, which extends its own deadline at each write) be
// taken within WriteTimeout, an idle keep-alive connection is closed after IdleTimeout, and at most
// MaxConns connections are open at once. A zero field takes its default.
type Options struct {
	ReadHeaderTimeout time.Duration // default 10 s
	ReadTimeout       time.Duration // default 30 s, the body included
	WriteTimeout      time.Duration // default 2 min
	// NoWriteTimeout leaves responses without a deadline (the gateway's: a model call's answer
	// may take many minutes to come and is written at once).
	NoWriteTimeout bool
	IdleTimeout    time.Duration // default 60 s
	// MaxConns is at most a quarter of the process's open-file limit, whatever is asked: the
	// process's other listeners, its store and its runs' files need descriptors too.
	MaxConns int // default 512
	// TrustProxy makes the server believe X-Forwarded-For (the client's address, for sign-in
	// limits) and X-Forwarded-Proto (https: session cookies are marked Secure). Set it only when
	// a proxy that sets both is the only way in.
	TrustProxy bool
}

func (o Options) withDefaults() Options {
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
	if lim := openFileLimit(); lim > 0 {
		o.MaxConns = max(1, min(o.MaxConns, lim/4))
	}
	if o.NoWriteTimeout {
		o.WriteTimeout = 0
	}
	o.ReadHeaderTimeout = min(o.ReadHeaderTimeout, o.ReadTimeout)
	return o
}

// Flags registers the options as flags of serve.
func (o *Options) Flags(f *pflag.FlagSet) {
	f.DurationVar(&o.ReadTimeout, "read-timeout", 30*time.Second, "a request, body included, must arrive within this")
	f.DurationVar(&o.WriteTimeout, "write-timeout", 2*time.Minute, "a response must be taken within this (event streams excepted)")
	f.DurationVar(&o.IdleTimeout, "idle-timeout", 60*time.Second, "an idle keep-alive connection is closed after this")
	f.IntVar(&o.MaxConns, "max-connections", 512, "connections open at once; more wait (idle ones are closed to make room)")
	f.BoolVar(&o.TrustProxy, "trust-proxy", false, "believe X-Forwarded-For and X-Forwarded-Proto (only behind a proxy that sets them)")
}

// Server is an http.Server whose Serve bounds the connections it holds.
type Server struct {
	*http.Server
	maxConns int
	// full is set while Accept waits for a slot: a connection that turns idle then is closed at
	// once, so idle keep-alive connections cannot keep anyone out.
	full atomic.Bool
	mu   sync.Mutex
	idle map[net.Conn]time.Time
}

// New makes the server for h with o's bounds.
func New(h http.Handler, o Options) *Server {
	o = o.withDefaults()
	s := &Server{maxConns: o.MaxConns, idle: map[net.Conn]time.Time{}}
	s.Server = &http.Server{Handler: h, ReadHeaderTimeout: o.ReadHeaderTimeout, ReadTimeout: o.ReadTimeout,
		WriteTimeout: o.WriteTimeout, IdleTimeout: o.IdleTimeout, ConnState: s.connState}
	return s
}

// Serve accepts connections on ln, at most maxConns open at once.
func (s *Server) Serve(ln net.Listener) error {
	return s.Server.Serve(&limitListener{Listener: ln, srv: s, slots: make(chan struct{}, s.maxConns), done: make(chan struct{})})
}

func (s *Server) connState(c net.Conn, st http.ConnState) {
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
func (s *Server) closeOldestIdle() {
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
	srv       *Server
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
