package e2etest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
)

// site is a local web server that counts the requests of each path.
type site struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string]int
}

func NewSite(t *testing.T, h http.Handler) *site {
	s := &site{hits: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *site) Count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

func (s *site) Total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, v := range s.hits {
		n += v
	}
	return n
}

func (s *site) HostPort() string { return strings.TrimPrefix(s.URL, "http://") }

func (e *Env) MustAgent(name, body string) {
	e.T.Helper()
	var out api.Error
	if st := e.Do("PUT", "/v2/agents/"+name, body, &out); st != 201 && st != 200 {
		e.T.Fatalf("create agent %s: HTTP %d %+v", name, st, out)
	}
}

func (e *Env) StartRun(agent, name, input string) {
	e.T.Helper()
	if st := e.Do("POST", "/v2/agentruns", fmt.Sprintf(`{"kind":"AgentRun","metadata":{"name":%q},"spec":{"agent":%q,"input":%q}}`, name, agent, input), nil); st != 201 {
		e.T.Fatalf("start run %s: HTTP %d", name, st)
	}
}

func (e *Env) AnswerOf(name string) string {
	e.T.Helper()
	r := e.WaitPhase(name, 60*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseWaiting, api.PhaseNeedsResolution)
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil {
		e.T.Fatalf("run %s: %s/%s %s", name, r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	if r.Status.Answer.Truncated {
		e.T.Fatalf("run %s: the answer is over the preview's size", name)
	}
	return r.Status.Answer.Preview
}
