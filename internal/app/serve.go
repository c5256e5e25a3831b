package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"agentrun.dev/agentrun/internal/agent"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/auth"
	"agentrun.dev/agentrun/internal/catalog"
	"agentrun.dev/agentrun/internal/computer"
	computers "agentrun.dev/agentrun/internal/computer/providers"
	"agentrun.dev/agentrun/internal/cost"
	"agentrun.dev/agentrun/internal/harness"
	"agentrun.dev/agentrun/internal/livetext"
	"agentrun.dev/agentrun/internal/model"
	"agentrun.dev/agentrun/internal/model/fake"
	"agentrun.dev/agentrun/internal/policy"
	"agentrun.dev/agentrun/internal/runner"
	"agentrun.dev/agentrun/internal/secret"
	"agentrun.dev/agentrun/internal/server"
	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/store/sqlite"
	"agentrun.dev/agentrun/internal/tools"
	"agentrun.dev/agentrun/internal/tools/webfetch"
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "dev"

// openPostgres opens the PostgreSQL store; it is set by the build that includes that backend.
var openPostgres func(ctx context.Context, url string) (store.Store, error)

// openStore opens the store AGENTRUN_STORE_URL names (postgres://...), or SQLite in the data folder.
func openStore(ctx context.Context, dir string) (store.Store, string, error) {
	url := os.Getenv("AGENTRUN_STORE_URL")
	switch {
	case url == "" || strings.HasPrefix(url, "sqlite:"):
		path := filepath.Join(dir, "agentrun.db")
		if p, ok := strings.CutPrefix(url, "sqlite:"); ok && p != "" {
			path = p
		}
		st, err := sqlite.Open(path)
		if err != nil {
			return nil, "", err
		}
		return st, "sqlite at " + path, nil
	case strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://"):
		if openPostgres == nil {
			return nil, "", errors.New("AGENTRUN_STORE_URL names PostgreSQL, but this build has no PostgreSQL backend")
		}
		st, err := openPostgres(ctx, url)
		if err != nil {
			return nil, "", fmt.Errorf("open PostgreSQL store: %w", err)
		}
		return st, "postgres at " + redactURL(url), nil
	}
	return nil, "", fmt.Errorf("AGENTRUN_STORE_URL %q: use postgres://... or leave it unset for SQLite in the data folder", redactURL(url))
}

// redactURL hides a password in a connection URL.
func redactURL(s string) string {
	u, err := neturl.Parse(s)
	if err != nil {
		return "(unparseable URL)"
	}
	return u.Redacted()
}

// newRunner builds a runner driving the built-in agent loop.
func newRunner(st store.Store, models *model.Config, dir, name string, o runnerOptions, log *slog.Logger) *runner.Runner {
	eng := &agent.Engine{Store: st, Models: models, DataDir: dir, Log: log, RunnerName: name, ServerDeny: o.Deny, Computers: computers.Default(secretKeys(st)),
		Prices: o.prices, Router: o.Router, Fetch: &webfetch.Fetcher{Allow: o.fetchAllow}, LiveText: o.liveText}
	if o.seal != nil {
		eng.Secrets = &secret.Opener{Box: o.seal, Store: st}
	}
	return &runner.Runner{Name: name, Store: st, Driver: eng, Log: log.With("runner", name), MaxRuns: o.MaxRuns, LeaseTTL: o.LeaseTTL, MaxLag: o.maxLag(), Version: version,
		// Another process may migrate the store past what this binary knows while it runs.
		CheckSchema: func(ctx context.Context) error {
			sc, err := st.SchemaVersion(ctx)
			if err != nil {
				return err
			}
			return sc.Check()
		}}
}

// runnerOptions are the flags serve and runner share for their runner.
type runnerOptions struct {
	MaxRuns  int
	LeaseTTL time.Duration
	// MaxLag is --max-lag (0: off).
	MaxLag time.Duration
	// Deny is the server's deny set: tool patterns refused for every agent, never-ask included.
	Deny []string
	// Prices is --prices (a price table file over the embedded one); Router is --router.
	Prices string
	Router string
	prices *cost.Table
	seal   *secret.Box
	// sealFrom says where seal's key came from.
	sealFrom string
	// DevHooks is the dev flag (dev.go).
	DevHooks bool
	// FetchAllow is --fetch-allow: addresses web_fetch may reach although they are not public.
	FetchAllow []string
	fetchAllow []webfetch.Allow
	// liveText carries the model's text to run pages while calls stream (liveTextHub).
	liveText *livetext.Hub
}

// liveTextHub is the process's hub of the model's live text: on a store that spans processes
// (PostgreSQL) it relays to the others, so a page on a server follows a remote runner's calls;
// listen: this process serves pages, so it takes what the others send.
func liveTextHub(st store.Store, listen bool) *livetext.Hub {
	h := livetext.NewHub()
	if relay, ok := st.(store.TextRelay); ok {
		h.Relay = relay
		if listen {
			relay.OnText(h.Receive)
		}
	}
	return h
}

// loadMoney reads the price table and the seal key (AGENTRUN_SEAL_KEY, or the data folder's
// seal.key, generated when missing) and says where they came from.
func (o *runnerOptions) loadMoney(dir string) (string, error) {
	t, err := cost.LoadTable(o.Prices)
	if err != nil {
		return "", err
	}
	o.prices = t
	box, where, err := secret.Load(os.Getenv, dir)
	if err != nil {
		return "", err
	}
	o.seal, o.sealFrom = box, where
	src := "embedded"
	if o.Prices != "" {
		src = o.Prices
	}
	return fmt.Sprintf("prices %s (%s), router %s, seal key %s", t.Version, src, o.Router, where), nil
}

func (o *runnerOptions) flags(f *pflag.FlagSet) {
	f.IntVar(&o.MaxRuns, "max-runs", 5000, "runs driven at once (waiting runs hold no goroutine)")
	f.DurationVar(&o.LeaseTTL, "lease-ttl", 30*time.Second, "how long a claim on a run lasts without renewal")
	f.DurationVar(&o.MaxLag, "max-lag", 50*time.Millisecond, "claim no new runs while the p99 of the runner's goroutine scheduling latency is over this (or its last lease renewal took over half its bound), until it is under half of it; 0: on slow renewals only")
	f.MarkHidden("lease-ttl")
	f.StringArrayVar(&o.Deny, "deny", nil, "a tool pattern refused for every agent, e.g. 'bash(curl *)' or web_fetch (repeatable)")
	f.StringVar(&o.Prices, "prices", os.Getenv("AGENTRUN_PRICES"), "price table file (JSON, micro-dollars per million tokens) over the embedded one (default $AGENTRUN_PRICES)")
	router := os.Getenv("AGENTRUN_ROUTER")
	if router == "" {
		router = agent.RouterModel
	}
	f.StringVar(&o.Router, "router", router, "how each turn's model family is chosen: model (a cheap model call) or rules (from the prompt; no call, no cost) (default $AGENTRUN_ROUTER or model)")
	devHooksFlag(f, &o.DevHooks)
	f.StringArrayVar(&o.FetchAllow, "fetch-allow", nil, "an address web_fetch may reach although it is loopback, private or link-local: ADDRESS, ADDRESS:PORT or PREFIX/BITS (repeatable)")
}

// maxLag is the runner's MaxLag for --max-lag: 0 there is off, which the runner spells negative.
func (o *runnerOptions) maxLag() time.Duration {
	if o.MaxLag == 0 {
		return -1
	}
	return o.MaxLag
}

func (o *runnerOptions) validate() error {
	if o.Router != agent.RouterModel && o.Router != agent.RouterRules {
		return fmt.Errorf("--router %q: use model or rules", o.Router)
	}
	if o.MaxLag < 0 {
		return fmt.Errorf("--max-lag %s: a scheduling latency is not negative (0 turns the check off)", o.MaxLag)
	}
	for _, d := range o.Deny {
		if _, err := policy.Parse(d); err != nil {
			return fmt.Errorf("--deny: %w", err)
		}
	}
	o.fetchAllow = o.fetchAllow[:0]
	for _, a := range o.FetchAllow {
		al, err := webfetch.ParseAllow(a)
		if err != nil {
			return fmt.Errorf("--%w", err)
		}
		o.fetchAllow = append(o.fetchAllow, al)
	}
	return nil
}

// startProcess makes the data folder (--data, see dataDir) and the logger a serve or runner
// process starts with.
func startProcess(data, logLevel string) (string, *slog.Logger, error) {
	dir, err := dataDir(data)
	if err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, fmt.Errorf("create data folder %s: %w", dir, err)
	}
	if err := secureDataDir(dir); err != nil {
		return "", nil, err
	}
	log, err := newLogger(logLevel)
	if err != nil {
		return "", nil, err
	}
	return dir, log, nil
}

// dataDir is --data, else AGENTRUN_HOME, else ~/.agentrun.
func dataDir(flag string) (string, error) {
	if flag != "" {
		return filepath.Abs(flag)
	}
	if v := os.Getenv("AGENTRUN_HOME"); v != "" {
		return filepath.Abs(v)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find home folder (set AGENTRUN_HOME or --data): %w", err)
	}
	return filepath.Join(home, ".agentrun"), nil
}

// readOrCreateSecret returns the content of a 0600 file, creating it with a random value first.
func readOrCreateSecret(path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil {
		if v := strings.TrimSpace(string(b)); v != "" {
			return v, nil
		}
	}
	var b [24]byte
	rand.Read(b[:])
	v := "art_" + hex.EncodeToString(b[:])
	if err := os.WriteFile(path, []byte(v+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return v, nil
}

// listen binds host:port, or with port 0 the first free port from 7340.
func listen(host string, port int) (net.Listener, error) {
	if port != 0 {
		return net.Listen("tcp", net.JoinHostPort(host, fmt.Sprint(port)))
	}
	var last error
	for p := 7340; p < 7440; p++ {
		l, err := net.Listen("tcp", net.JoinHostPort(host, fmt.Sprint(p)))
		if err == nil {
			return l, nil
		}
		last = err
	}
	return nil, fmt.Errorf("no free port in 7340-7439: %w", last)
}

// serveOptions are serve's flags.
type serveOptions struct {
	data, host, runnerName, logLevel, listenAddr string
	publicURL                                    string
	port                                         int
	noRunner, metricsPublic, noOpen, noAccounts  bool
	retention                                    time.Duration
	ro                                           runnerOptions
	wo                                           webhookOptions
	ho                                           server.HTTPOptions
}

func newServeCmd() *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Start the server (and one runner) on port 7340 or the next free one",
		Long: `Start the agentrun server with the embedded SQLite store and one runner in the same process.
Everything is kept in the data folder (--data, AGENTRUN_HOME, or ~/.agentrun): the store, the API
token, run folders. Model keys come from the environment: ANTHROPIC_API_KEY (ANTHROPIC_BASE_URL),
OPENAI_API_KEY (OPENAI_BASE_URL), OPENROUTER_API_KEY (OPENROUTER_BASE_URL).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd.Context()) },
	}
	f := cmd.Flags()
	f.StringVar(&o.data, "data", "", "data folder (default $AGENTRUN_HOME or ~/.agentrun)")
	f.StringVar(&o.host, "host", "127.0.0.1", "address to listen on")
	f.IntVar(&o.port, "port", 0, "port (default 7340 or the next free one)")
	f.StringVar(&o.listenAddr, "listen", "", "exact address to listen on, overriding --host and --port (\"127.0.0.1:0\" picks a free port)")
	f.BoolVar(&o.noRunner, "no-runner", false, "serve the API only; runners run elsewhere")
	f.BoolVar(&o.noOpen, "no-open", false, "do not open the console in the browser (serve opens it on first start, or with --no-accounts, when started from a terminal on a machine with a display)")
	f.BoolVar(&o.noAccounts, "no-accounts", false, "a launcher on a laptop: the console needs no password, and the server listens on loopback only (refused on any other address)")
	f.BoolVar(&o.metricsPublic, "metrics-public", false, "serve GET /metrics without credentials (by default a scraper sends the API token as a bearer token)")
	f.DurationVar(&o.retention, "retention", store.DefaultRetention, "purge a finished run's recorded payloads (steps' arguments and results, events' data, run folder) this long after it ends; 0 keeps them")
	f.StringVar(&o.runnerName, "runner-name", "", "name of the in-process runner (default local)")
	f.StringVar(&o.publicURL, "public-url", defaultPublicURL(), "the URL people reach this server at, behind a proxy or on a platform (https://agents.example.com): the base of the console link, runs' console_url and webhook URLs (default $AGENTRUN_PUBLIC_URL, else Render's $RENDER_EXTERNAL_URL, else the listening address)")
	o.ro.flags(f)
	o.wo.flags(f)
	o.ho.Flags(f)
	f.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	return cmd
}

// run is serve: it opens the store, listens, builds the server, its runner and controllers,
// says where it serves, and runs every part until a signal stops them.
func (o *serveOptions) run(cmdCtx context.Context) error {
	links, err := o.check()
	if err != nil {
		return err
	}
	dir, log, err := startProcess(o.data, o.logLevel)
	if err != nil {
		return err
	}
	if err := applyDevHooks(o.ro.DevHooks, log); err != nil {
		return err
	}
	token, tokenCreated, tokenFromEnv, err := serverToken(dir)
	if err != nil {
		return err
	}
	st, storeDesc, err := openStore(cmdCtx, dir)
	if err != nil {
		return err
	}
	defer st.Close()
	ln, err := o.listen()
	if err != nil {
		return err
	}
	base := linkURL(ln.Addr())
	if links == "" {
		links = base
	}
	models := model.ConfigFromEnv(os.Getenv, &http.Client{Timeout: 10 * time.Minute})
	moneyDesc, err := o.ro.loadMoney(dir)
	if err != nil {
		return err
	}
	if err := useStore(cmdCtx, st, o.ro.seal, o.ro.sealFrom, log); err != nil {
		return err
	}
	useStoredModelKeys(models, st, o.ro.seal)
	providers := []string{}
	for name := range models.Providers {
		providers = append(providers, name)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tel, err := startTelemetry(ctx, log)
	if err != nil {
		return err
	}
	// Deferred after runParts: the spans of the last drives are flushed at stop.
	defer flushTelemetry(tel, log)

	o.ro.liveText = liveTextHub(st, true)
	var r *runner.Runner
	if !o.noRunner {
		if o.runnerName == "" {
			o.runnerName = "local"
		}
		r = newRunner(st, models, dir, o.runnerName, o.ro, log)
	}
	accounts, err := auth.Open(dir)
	if err != nil {
		return err
	}
	if tokenFromEnv {
		accounts.AcceptSetupToken(token)
	}
	srv := o.newServer(st, token, links, dir, log, accounts, models, providers, r)
	// The ready-made agent claude-assistant, once per store (see EnsureBuiltinAgents).
	bctx, bcancel := context.WithTimeout(ctx, 30*time.Second)
	builtin, err := srv.EnsureBuiltinAgents(bctx)
	bcancel()
	if err != nil {
		log.Warn("the ready-made agent was not made", "agent", api.BuiltinAssistant, "err", err)
	}
	controllers, err := o.controllers(srv, st, log)
	if err != nil {
		return err
	}
	hs := server.NewHTTPServer(srv.Handler(), o.ho)
	info, _ := json.Marshal(map[string]any{"url": base, "pid": os.Getpid(), "version": version})
	if err := os.WriteFile(filepath.Join(dir, "server.json"), info, 0o600); err != nil {
		return fmt.Errorf("write server.json: %w", err)
	}
	defer os.Remove(filepath.Join(dir, "server.json"))

	o.banner(serveBanner{base: base, links: links, dir: dir, storeDesc: storeDesc, token: token, tokenCreated: tokenCreated,
		moneyDesc: moneyDesc, runner: r != nil, builtin: builtin, accounts: accounts, models: models, providers: providers, log: log})
	// Every part runs under runParts, which returns only when all have stopped, in order;
	// the store closes after it (the deferred Close above).
	context.AfterFunc(ctx, func() { fmt.Fprintln(os.Stderr, "agentrun: shutting down") })
	return runParts(ctx, parts{http: hs, ln: ln, runner: r, controllers: controllers, log: log})
}

// check refuses flags that do not go together before anything starts, and returns the base of
// the links serve gives (--public-url; empty: the listening address).
func (o *serveOptions) check() (links string, err error) {
	if err := o.ro.validate(); err != nil {
		return "", err
	}
	if err := checkRetention(o.retention); err != nil {
		return "", err
	}
	if err := o.wo.validate(); err != nil {
		return "", err
	}
	links, err = checkPublicURL(o.publicURL)
	if err != nil {
		return "", err
	}
	if o.noAccounts {
		if err := checkNoAccounts(o.host, o.listenAddr, o.publicURL); err != nil {
			return "", err
		}
	}
	return links, nil
}

// listen listens on --listen, else --host and --port (or the next free port); with
// --no-accounts only on a loopback address.
func (o *serveOptions) listen() (net.Listener, error) {
	var ln net.Listener
	var err error
	if o.listenAddr != "" {
		ln, err = net.Listen("tcp", o.listenAddr)
	} else {
		ln, err = listen(o.host, o.port)
	}
	if err != nil {
		return nil, err
	}
	if t, ok := ln.Addr().(*net.TCPAddr); o.noAccounts && (!ok || !t.IP.IsLoopback()) {
		ln.Close()
		return nil, fmt.Errorf("--no-accounts serves this machine only, and %s is not a loopback address: drop --no-accounts to serve other machines, with accounts", ln.Addr())
	}
	return ln, nil
}

// newServer builds the HTTP server's state: the store, credentials, models, tools and the
// capabilities it reports, and the in-process runner's hooks when there is one.
func (o *serveOptions) newServer(st store.Store, token, links, dir string, log *slog.Logger, accounts *auth.Accounts, models *model.Config, providers []string, r *runner.Runner) *server.Server {
	available := map[string]bool{tools.AskPersonName: true, catalog.WebFetchName: true}
	for _, n := range tools.Names() {
		available[n] = true
	}
	var toolNames []string
	for n := range available {
		toolNames = append(toolNames, n)
	}
	ro := o.ro
	srv := &server.Server{Store: st, Token: token, BaseURL: links, DataDir: dir, Log: log, Tools: available, Accounts: accounts, Computers: computers.Default(secretKeys(st)),
		Prices: ro.prices, Models: models, Seal: ro.seal, LiveText: ro.liveText,
		Capabilities: map[string]any{
			"version": version,
			// Each harness: available or not, its pinned version, where installed, why not;
			// looked at on each request, so one installed by hand shows without a restart.
			"harnesses": func() any { return harness.Capabilities(dir) },
			"tools":     toolNames,
			// The tools an agent gets with its computer, listed in spec.tools or not.
			"computerTools": map[string][]string{
				"sandbox": agent.ComputerTools(computer.KindSandbox),
				"desktop": agent.ComputerTools(computer.KindDesktop),
				"browser": agent.ComputerTools(computer.KindBrowser),
			},
			"models": map[string]any{"providers": providers, "defaultProvider": models.DefaultProvider, "defaultModel": models.DefaultModel},
			"runner": !o.noRunner,
			"denied": ro.Deny,
			// web_fetch reaches public addresses and these.
			"fetchAllow": ro.FetchAllow,
			"money":      map[string]any{"router": ro.Router, "pricesVersion": ro.prices.Version, "markup": "server access is billed at cost / 0.875"},
		}}
	if r != nil {
		srv.Interrupt, srv.RunnerReady, srv.Steer = r.Interrupt, r.Ready, r.Steer
		if eng, ok := r.Driver.(*agent.Engine); ok {
			// The console shows, and hands over, the browsers this process's runner keeps.
			srv.Screens, srv.LocalRunner = eng, o.runnerName
		}
	}
	srv.WebhookAllow = o.wo.allow
	srv.TrustProxy = o.ho.TrustProxy
	srv.NoAccounts = o.noAccounts
	srv.MetricsPublic = o.metricsPublic
	return srv
}

// controllers are the parts serve runs beside the HTTP server and the runner: groups, the
// trigger scheduler, webhooks, retention and pprof (when asked for).
func (o *serveOptions) controllers(srv *server.Server, st store.Store, log *slog.Logger) (map[string]func(context.Context), error) {
	controllers := groupControllers(srv, st, log)
	controllers["trigger scheduler"] = triggerScheduler(srv, st, o.ro.DevHooks, log)
	controllers["webhooks"] = webhookDispatcher(st, o.ro.seal, o.wo, o.retention, log).Run
	if o.retention > 0 {
		controllers["retention"] = retentionPart(st, o.retention, o.ro.DevHooks, log)
	}
	prof, err := pprofPart()
	if err != nil {
		return nil, err
	}
	if prof != nil {
		controllers["pprof"] = prof
	}
	return controllers, nil
}

// serveBanner is what serve says on start.
type serveBanner struct {
	base, links, dir, storeDesc, token, moneyDesc string
	tokenCreated, runner, builtin                 bool
	accounts                                      *auth.Accounts
	models                                        *model.Config
	providers                                     []string
	log                                           *slog.Logger
}

// banner tells, on stderr, where serve serves and what it found, and opens the console in the
// browser on a first start (or with --no-accounts) from a terminal with a display.
func (o *serveOptions) banner(b serveBanner) {
	fmt.Fprintf(os.Stderr, "agentrun %s serving at %s\n  console:   %s/\n  API token: %s\n  store:     %s\n", version, b.base, b.links, filepath.Join(b.dir, "token"), b.storeDesc)
	if b.tokenCreated {
		// Shown once, when made, so a container's first log gives it (later: the token file).
		fmt.Fprintf(os.Stderr, "  token:     %s  (made now and shown this once; kept in the token file above)\n", b.token)
		tokenShown(b.dir)
	}
	fmt.Fprintf(os.Stderr, "  money:     %s\n", b.moneyDesc)
	if b.runner {
		fmt.Fprintf(os.Stderr, "  runner:    %s (in this process)\n", o.runnerName)
	}
	if b.builtin {
		fmt.Fprintf(os.Stderr, "  agents:    made the ready-made agent %s (delete it and it stays deleted)\n", api.BuiltinAssistant)
	}
	firstStart := b.accounts.SetupCode() != ""
	if o.noAccounts {
		fmt.Fprintf(os.Stderr, "  accounts:  none (--no-accounts): the console needs no password and answers this machine only\n")
	} else if code := b.accounts.SetupCode(); code != "" {
		fmt.Fprintf(os.Stderr, "  setup code: %s  (first sign-in sets the password: open the console, or run `agentrun login`)\n", code)
	}
	if !o.noOpen && (o.noAccounts || firstStart) && hasDisplay(os.Getenv) && stdoutIsTerminal() {
		argv := browserCommand(os.Getenv, b.links+"/")
		if err := openBrowser(argv); err != nil {
			b.log.Warn("the console was not opened in the browser", "err", err)
		} else {
			fmt.Fprintf(os.Stderr, "  browser:   opened %s/ with %s (--no-open not to)\n", b.links, argv[0])
		}
	}
	if len(b.providers) == 0 {
		fmt.Fprintf(os.Stderr, "  models:    none in the environment: paste a key in the console under Settings → Model keys, or set ANTHROPIC_API_KEY, OPENAI_API_KEY or OPENROUTER_API_KEY\n")
	} else {
		fmt.Fprintf(os.Stderr, "  models:    %s (default %s)\n", strings.Join(b.providers, ", "), b.models.DefaultProvider)
	}
	for _, note := range harness.Notes(b.dir) {
		fmt.Fprintf(os.Stderr, "  harness:   %s\n", note)
	}
}

// newDevCmd is `agentrun dev ...`: developer tools such as the scripted model server.
func newDevCmd() *cobra.Command {
	dev := &cobra.Command{Use: "dev", Short: "Developer tools (the scripted model server)"}
	var script, addr string
	ms := &cobra.Command{
		Use:   "model-server --script FILE [--addr 127.0.0.1:PORT]",
		Short: "Serve a scripted model speaking the Anthropic and OpenAI wire formats",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, err := fake.LoadScript(script)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return fake.ListenAndServe(ctx, addr, sc, os.Stderr)
		},
	}
	ms.Flags().StringVar(&script, "script", "", "script file (YAML or JSON)")
	ms.Flags().StringVar(&addr, "addr", "127.0.0.1:8787", "address to listen on")
	ms.MarkFlagRequired("script")
	dev.AddCommand(ms, newInstallHarnessesCmd())
	return dev
}

// linkURL is the base of the links the server gives people (the console's, a run's console_url,
// a trigger's webhook URL, server.json): its listening address, but loopback for a wildcard
// (--host 0.0.0.0 or ::, as in a container), whose own address http://[::]:7340 is no link.
func linkURL(a net.Addr) string {
	if t, ok := a.(*net.TCPAddr); ok && t.IP.IsUnspecified() {
		return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(t.Port))
	}
	return "http://" + a.String()
}

// defaultPublicURL is --public-url's default: $AGENTRUN_PUBLIC_URL, else $RENDER_EXTERNAL_URL
// (Render sets it for a web service to its https://NAME.onrender.com URL).
func defaultPublicURL() string {
	if v := os.Getenv("AGENTRUN_PUBLIC_URL"); v != "" {
		return v
	}
	return os.Getenv("RENDER_EXTERNAL_URL")
}

// checkPublicURL checks --public-url ("" when unset): an http or https URL with a host and no
// query, written back without a trailing slash.
func checkPublicURL(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	u, err := neturl.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("--public-url %q (or $AGENTRUN_PUBLIC_URL, $RENDER_EXTERNAL_URL): want an http or https URL with a host and no query, such as https://agents.example.com", v)
	}
	return strings.TrimRight(u.String(), "/"), nil
}
