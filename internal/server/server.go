// Package server is the HTTP face of agentrun: the /v2 REST API (resources, run subresources, SSE
// timelines), bearer-token auth, error mapping to {code, message, field}, and the console's routes.
// Handlers validate input with internal/api, write through the store, and never run an agent loop
// themselves; runners do that.
package server

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/a2a"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/auth"
	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/console"
	"agentrun.dev/agentrun/internal/cost"
	"agentrun.dev/agentrun/internal/group"
	"agentrun.dev/agentrun/internal/livetext"
	"agentrun.dev/agentrun/internal/metrics"
	"agentrun.dev/agentrun/internal/model"
	"agentrun.dev/agentrun/internal/secret"
	"agentrun.dev/agentrun/internal/selfskill"
	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/tools/webfetch"
	"agentrun.dev/agentrun/internal/trigger"
)

// Server serves the API and the console.
type Server struct {
	Store store.Store
	// Token is the API bearer token.
	Token string
	// BaseURL is where people reach this server (for console URLs).
	BaseURL string
	DataDir string
	Log     *slog.Logger
	// Interrupt asks the local runner to stop driving a run now (to apply a cancellation).
	Interrupt func(run string)
	// Steer tells the local runner that message seq (ifBusy interrupt or rollback) wants the turn
	// in flight of a run it drives stopped now; a runner elsewhere finds it in the store.
	Steer func(run string, seq int64)
	// Tools are the tool names agents may use on this server.
	Tools map[string]bool
	// Computers are the computer providers (to check an agent's computer is available).
	Computers *computer.Registry
	// Accounts are the people who may sign in (approvals, secrets).
	Accounts *auth.Accounts
	// NoAccounts (serve --no-accounts, loopback only): the console asks for no password.
	NoAccounts bool
	// Prices is the price table (nil: the embedded one); Models the server's model access, to
	// check at run creation that a capped run's model can be priced.
	Prices *cost.Table
	Models *model.Config
	// Seal seals secrets (nil: secrets cannot be written).
	Seal *secret.Box
	// Groups is the group admission loop, kicked when members are created or limits change.
	Groups *group.Controller
	// Triggers fires triggers (hooks, `triggers fire`); nil: triggers are stored but not fired.
	Triggers *trigger.Controller
	// WebhookAllow is --webhook-allow: addresses a webhook may name although not public.
	WebhookAllow []webfetch.Allow
	// Eval serves evaluation groups (nil: evaluations are refused).
	Eval Evaluator
	// Screens shows the screens of the browsers the runner in this process keeps, and
	// LocalRunner names that runner (both unset without one): the console's Screen and takeover.
	Screens     console.Screens
	LocalRunner string
	// LiveText is the process's hub of the model's live text, which run pages follow (nil: the
	// pages show a call's text once it completes).
	LiveText *livetext.Hub
	// RunnerReady is the readiness of the runner in this process (nil: none), for GET /readyz.
	RunnerReady func() error
	// Capabilities is what `server capabilities` reports; a value that is a func() any is called
	// at each request.
	Capabilities map[string]any
	Now          func() time.Time
	// TrustProxy believes X-Forwarded-For and X-Forwarded-Proto (see HTTPOptions.TrustProxy).
	TrustProxy bool
	// MetricsPublic serves GET /metrics to anyone (serve --metrics-public); otherwise it takes
	// the API's credentials, as a scraper's bearer token (Prometheus: authorization.credentials_file).
	MetricsPublic bool
	// MaxFollowers bounds the event streams one credential holds open (0: 32).
	MaxFollowers int

	followers followers
	agentMCP  *agentMCP
}

// maxBody bounds request bodies: a 256 KiB input, JSON-escaped, plus the rest of a resource.
const maxBody = 2 << 20

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler {
	if s.Now == nil {
		s.Now = time.Now
	}
	mux := http.NewServeMux()
	v2 := http.NewServeMux()
	v2.HandleFunc("GET /v2/capabilities", s.capabilities)
	v2.HandleFunc("GET /v2/openapi.json", s.openapi)
	v2.HandleFunc("GET /v2/runners", s.listRunners)
	agents, runs := s.agents(), s.runs()
	v2.HandleFunc("GET /v2/agents", agents.listAll)
	v2.HandleFunc("POST /v2/agents", s.createAgent)
	v2.HandleFunc("GET /v2/agents/{name}", agents.getOne)
	v2.HandleFunc("GET /v2/agents/{name}/mcp-tools/{server}", s.mcpTools)
	v2.HandleFunc("PUT /v2/agents/{name}", s.applyAgent)
	v2.HandleFunc("PATCH /v2/agents/{name}", s.patchAgent)
	v2.HandleFunc("DELETE /v2/agents/{name}", agents.deleteOne)
	v2.HandleFunc("POST /v2/agents/{name}/runs", s.startRun)
	v2.HandleFunc("GET /v2/agentruns", runs.listAll)
	v2.HandleFunc("POST /v2/agentruns", s.createRun)
	v2.HandleFunc("GET /v2/agentruns/{name}", runs.getOne)
	v2.HandleFunc("PUT /v2/agentruns/{name}", s.applyRun)
	v2.HandleFunc("PATCH /v2/agentruns/{name}", s.patchRun)
	v2.HandleFunc("GET /v2/credits", s.getCredits)
	v2.HandleFunc("POST /v2/credits", s.addCredits)
	v2.HandleFunc("GET /v2/prices", s.getPrices)
	v2.HandleFunc("GET /v2/secrets", s.listSecrets)
	v2.HandleFunc("PUT /v2/secrets/{name}", s.putSecret)
	v2.HandleFunc("DELETE /v2/secrets/{name}", s.deleteSecret)
	v2.HandleFunc("DELETE /v2/agentruns/{name}", runs.deleteOne)
	v2.HandleFunc("POST /v2/agentruns/{name}/messages", s.postMessage)
	v2.HandleFunc("GET /v2/agentruns/{name}/messages", s.listMessages)
	v2.HandleFunc("POST /v2/agentruns/{name}/cancel", s.cancelRun)
	v2.HandleFunc("GET /v2/agentruns/{name}/steps", s.listSteps)
	v2.HandleFunc("GET /v2/agentruns/{name}/answer", s.getAnswer)
	v2.HandleFunc("GET /v2/agentruns/{name}/events", s.events)
	v2.HandleFunc("GET /v2/agentruns/{name}/files/{path...}", s.getFile)
	v2.HandleFunc("POST /v2/agentruns/{name}/resolve", s.resolve)
	s.groupRoutes(v2)
	s.triggerRoutes(v2, mux)
	s.webhookRoutes(v2)
	s.skillRoutes(v2)
	s.learningRoutes(v2)
	s.workflowRoutes(v2)
	s.templateRoutes(v2)
	s.outwardRoutes(v2)
	s.forkRoutes(v2)
	v2.HandleFunc("GET /v2/agentruns/{name}/approvals", s.listApprovals)
	v2.HandleFunc("POST /v2/agentruns/{name}/approvals/{id}", s.decideApproval)
	v2.HandleFunc("/v2/", func(w http.ResponseWriter, r *http.Request) { notFoundOrNotAllowed(v2, "/v2/", w, r) })
	mux.Handle("/v2/", s.auth(s.agentsChangedHook(v2)))
	if s.Accounts != nil {
		mux.HandleFunc("POST /v2/login", s.login)
		v2.HandleFunc("GET /v2/whoami", s.whoami)
		v2.HandleFunc("POST /v2/logout", s.logout)
	}
	mux.HandleFunc("GET /livez", Livez)
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", Health{Store: s.Store, Runner: s.RunnerReady, Log: s.Log}.Readyz)
	if s.MetricsPublic {
		mux.HandleFunc("GET /metrics", s.metrics)
	} else {
		mux.Handle("GET /metrics", s.auth(http.HandlerFunc(s.metrics)))
	}
	// The skill teaching a coding agent the CLI: documentation, public like the console's pages.
	mux.HandleFunc("GET /SKILL.md", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
		io.WriteString(w, selfskill.Text)
	})
	s.consoleRoutes(mux)
	return s.logRequests(mux)
}

// healthz answers ok only when the store answers a cheap query in time (Health.Healthz).
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	Health{Store: s.Store, Log: s.Log}.Healthz(w, r)
}

func (s *Server) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := s.authenticate(r)
		if !ok {
			writeErr(w, api.Errorf(http.StatusUnauthorized, api.CodeUnauthorized, "", "missing or wrong credentials: send Authorization: Bearer <API token> (the data folder's token file) or a person's session from `agentrun login`"))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(c int) { w.status = c; w.ResponseWriter.WriteHeader(c) }
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: 200}
		next.ServeHTTP(sw, r)
		// A server error is worth an operator's eye; the rest is detail.
		level := slog.LevelDebug
		if sw.status >= 500 {
			level = slog.LevelWarn
		}
		s.Log.Log(r.Context(), level, "http", "method", r.Method, "path", r.URL.Path, "status", sw.status, "took", time.Since(start))
	})
}

// kindHint says what a kind no provider makes would take.
var kindHint = map[computer.Kind]string{
	computer.KindPhone: " (an Android phone: the AgentRun documents' phone harness rents a cloud Android, and no client for one is built in)",
}

// ---- helpers ----

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func writeErr(w http.ResponseWriter, err error) {
	e, ok := api.AsError(err)
	if !ok {
		e = storeErr(err)
	}
	if e.Status == 0 {
		e.Status = http.StatusBadRequest
	}
	writeJSON(w, e.Status, e)
}

// storeErr maps store errors onto API errors.
func storeErr(err error) *api.Error {
	if e, ok := ruleErr(err); ok {
		return e
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return api.Errorf(http.StatusNotFound, api.CodeNotFound, "", "%v", err)
	case errors.Is(err, store.ErrAlreadyExists):
		return api.Errorf(http.StatusConflict, api.CodeAlreadyExists, "metadata.name", "%v", err)
	case errors.Is(err, store.ErrConflict):
		return api.Errorf(http.StatusConflict, api.CodeConflict, "metadata.resourceVersion", "%v", err)
	case errors.Is(err, store.ErrFinished):
		return api.Errorf(http.StatusConflict, api.CodeAgentRunFinished, "", "the run has finished and takes no more messages or actions")
	case errors.Is(err, store.ErrNotWaiting):
		return api.Errorf(http.StatusConflict, api.CodeNotResolvable, "", "%v", err)
	case errors.Is(err, store.ErrUnavailable):
		return api.Errorf(http.StatusServiceUnavailable, api.CodeStoreUnavailable, "", "the store is unavailable, try again: %v", err)
	case errors.Is(err, store.ErrStoreFull):
		return api.Errorf(http.StatusInsufficientStorage, api.CodeStoreFull, "", "the store's disk is full; nothing was written: free space and try again (%v)", err)
	case errors.Is(err, context.Canceled):
		return api.E(api.CodeClientClosed, "", "request cancelled")
	}
	return api.Errorf(http.StatusInternalServerError, api.CodeInternal, "", "%v", err)
}

// readBody reads a request body within the size limit.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return readBodyLimit(w, r, maxBody)
}

// readBodyLimit is readBody with a bound of its own (a template's body holds its skills).
func readBodyLimit(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, api.Errorf(http.StatusRequestEntityTooLarge, api.CodeTooLarge, "", "request body is larger than %d bytes", limit)
		}
		return nil, api.Errorf(http.StatusBadRequest, api.CodeInvalid, "", "read body: %v", err)
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil, api.Errorf(http.StatusBadRequest, api.CodeInvalid, "", "request body is empty")
	}
	// Every body, merge patches included: one that names a key twice says two things.
	if err := api.CheckDuplicateKeys(b); err != nil {
		return nil, err
	}
	return b, nil
}

// hasKey reports whether a JSON object body has a top-level key.
func hasKey(body []byte, key string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return false
	}
	_, ok := m[key]
	return ok
}

const nameChars = "abcdefghijklmnopqrstuvwxyz0123456789"

// generateName makes "prefix-xxxxx" (a variable so that a test can make names collide).
var generateName = func(prefix string) string {
	var b [5]byte
	rand.Read(b[:])
	for i := range b {
		b[i] = nameChars[int(b[i])%len(nameChars)]
	}
	if len(prefix) > 56 {
		prefix = prefix[:56]
	}
	return strings.TrimRight(prefix, "-") + "-" + string(b[:])
}

func (s *Server) capabilities(w http.ResponseWriter, r *http.Request) {
	caps := map[string]any{}
	for k, v := range s.Capabilities {
		if f, ok := v.(func() any); ok {
			v = f() // asked each time: it changes while the server runs (a harness installed)
		}
		caps[k] = v
	}
	caps["store"] = s.Store.Backend()
	caps["mcp"] = mcpCapabilities
	// What this server serves its agents over (docs/mcp-and-a2a.md).
	base := strings.TrimRight(s.BaseURL, "/")
	caps["protocols"] = map[string]any{"mcp": base + "/v2/mcp", "a2a": base + "/v2/a2a/{agent}", "a2aCard": base + "/v2/a2a/{agent}/.well-known/agent-card.json", "a2aVersion": a2a.ProtocolVersion}
	if s.Computers != nil {
		// Asked each time: whether a provider works, and whether its one-time setup (the docker
		// sandbox's image) is done, change while the server runs.
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		computers := []map[string]any{{"kind": "none", "available": true}}
		for _, p := range s.Computers.Status(ctx) {
			m := map[string]any{"provider": p.Name, "kinds": p.Kinds, "available": p.Available}
			if !p.Available {
				m["why"] = p.Reason
			} else if p.Reason != "" {
				m["note"] = p.Reason
			}
			if len(p.KindsUnavailable) > 0 {
				// Kinds the provider lists that need more here (the local desktop needs Xvfb).
				m["kindsUnavailable"] = p.KindsUnavailable
			}
			computers = append(computers, m)
		}
		cancel()
		// A kind no provider makes at all is listed too, so that it is plainly missing, not forgotten.
		for _, k := range []computer.Kind{computer.KindSandbox, computer.KindBrowser, computer.KindDesktop, computer.KindPhone} {
			if !s.Computers.Makes(k) {
				computers = append(computers, map[string]any{"kind": k, "available": false,
					"why": fmt.Sprintf("no provider built into this server makes %s computers", k) + kindHint[k]})
			}
		}
		caps["computers"] = computers
	}
	writeJSON(w, http.StatusOK, caps)
}

func (s *Server) openapi(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, openAPIDoc())
}

// consoleURL is a run's page.
func (s *Server) consoleURL(run string) string {
	return strings.TrimRight(s.BaseURL, "/") + "/runs/" + run
}

func fmtErr(format string, args ...any) error { return fmt.Errorf(format, args...) }

func (s *Server) consoleRoutes(mux *http.ServeMux) {
	if s.Accounts != nil {
		(&console.Console{Store: s.Store, Accounts: s.Accounts, Approver: consoleApprover{s}, Computers: s.Computers,
			Screens: s.Screens, Runner: s.LocalRunner, TrustProxy: s.TrustProxy, Agents: consoleAgents{s}, Learning: consoleLearning{s},
			Seal: s.Seal, Models: s.Models, Runs: consoleRuns{s}, NoAccounts: s.NoAccounts, LiveText: s.LiveText, RaiseCap: s.consoleRaiseCap, Fork: s.consoleFork, CheckWebhook: s.checkWebhook,
			Follow: func(r *http.Request) (func(), bool) { return s.followers.acquire(r, s.MaxFollowers) }}).Register(mux)
	}
}

// metrics is GET /metrics in the Prometheus text format. It carries counts and latencies only.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	if counts, err := s.Store.CountRuns(r.Context()); err == nil {
		metrics.RunsByPhase.SetAll(func(set func(float64, ...string)) {
			for _, p := range api.Phases {
				set(float64(counts[string(p)]), string(p))
			}
		})
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	metrics.Default.Write(w)
}

// runnerView is a runner as GET /v2/runners shows it.
type runnerView struct {
	store.RunnerInfo
	// Live is false when the runner has not sent a heartbeat for longer than a lease.
	Live bool `json:"live"`
	// SinceHeartbeat is how long ago its last heartbeat was, rounded.
	SinceHeartbeat string `json:"sinceHeartbeat"`
}

func (s *Server) listRunners(w http.ResponseWriter, r *http.Request) {
	rs, err := s.Store.ListRunners(r.Context())
	if err != nil {
		writeErr(w, err)
		return
	}
	out := make([]runnerView, 0, len(rs))
	for _, ri := range rs {
		since := s.Now().Sub(ri.HeartbeatAt)
		out = append(out, runnerView{RunnerInfo: ri, Live: ri.Live(s.Now()), SinceHeartbeat: since.Round(time.Second).String()})
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": out})
}
