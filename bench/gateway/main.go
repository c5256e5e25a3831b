// Command gateway measures what the harness gateway adds to a model call (bench/README.md):
//
//   - direct: POST /v1/messages (streaming) to the scripted model server, as a harness pointed
//     at the vendor would;
//   - proxy: the same call through the gateway's real listener and token check to a run that
//     forwards it (model.Forwarder) and reads its usage (gateway.Summarize), with no journal;
//   - step: as proxy, the forward made inside a journal step on a real SQLite store with the
//     step's credit reservation first, which is what the host adds to every harness call (the
//     intent and completion commits and the reservation; the cap arithmetic is not included);
//   - responses and translated: the same conversation as a streamed OpenAI Responses call (the
//     system prompt a developer message, as Codex sends it), posted to the scripted server's
//     /v1/responses (responses), and through the gateway to a run that translates it to the
//     Messages API, forwards it to /v1/messages and translates the answer back (translated: what
//     a codex run on an Anthropic provider adds, without the journal);
//   - start: with -harness, `agentrun serve` is built and started and a claude-agent run created:
//     the time from its creation to the first model call reaching the scripted server, the
//     harness already installed (AGENTRUN_HARNESS_CACHE).
//
// The figures are wall-clock distributions of sequential calls; added latency is a percentile of
// a path minus the same percentile of direct. The last line of stdout is one JSON object.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/gateway"
	"agentrun.dev/agentrun/internal/gateway/translate"
	"agentrun.dev/agentrun/internal/journal"
	"agentrun.dev/agentrun/internal/model"
	"agentrun.dev/agentrun/internal/model/fake"
	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/store/sqlite"
)

// Dist is a latency distribution in milliseconds.
type Dist struct {
	N    int     `json:"n"`
	P50  float64 `json:"p50Ms"`
	P99  float64 `json:"p99Ms"`
	Mean float64 `json:"meanMs"`
}

func dist(ds []time.Duration) Dist {
	slices.Sort(ds)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return Dist{N: len(ds), P50: ms(ds[len(ds)/2]), P99: ms(ds[len(ds)*99/100]), Mean: ms(sum / time.Duration(len(ds)))}
}

const script = `
entries:
  - name: any
    match: "*"
    turns:
      - text: "a short scripted answer"
`

func main() {
	n := flag.Int("n", 2000, "calls per path")
	size := flag.Int("body", 48<<10, "request body bytes (Claude Code's first call is ~50 KB)")
	withHarness := flag.Bool("harness", false, "also measure a harness run's start to its first model call (builds and starts agentrun serve; needs the harness installed or npm)")
	harnessName := flag.String("harness-name", "claude-agent", "the harness -harness measures (claude-agent, pi, opencode: one the scripted Messages endpoint serves)")
	flag.Parse()
	if err := run(*n, *size, *withHarness, *harnessName); err != nil {
		fmt.Fprintln(os.Stderr, "bench gateway:", err)
		os.Exit(1)
	}
}

func run(n, size int, withHarness bool, harnessName string) error {
	ctx := context.Background()
	sc, err := fake.ParseScript([]byte(script))
	if err != nil {
		return err
	}
	srv, url, err := fake.Start(sc)
	if err != nil {
		return err
	}
	defer srv.Close()
	body, _ := json.Marshal(map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 1024, "stream": true,
		"system":   strings.Repeat("You are a careful agent. ", size/25),
		"messages": []map[string]any{{"role": "user", "content": "hello"}}})
	respBody, _ := json.Marshal(map[string]any{"model": "claude-sonnet-4-5", "max_output_tokens": 1024, "stream": true, "store": false,
		"input": []map[string]any{{"type": "message", "role": "developer", "content": []map[string]string{{"type": "input_text", "text": strings.Repeat("You are a careful agent. ", size/25)}}},
			{"type": "message", "role": "user", "content": []map[string]string{{"type": "input_text", "text": "hello"}}}}})
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	call := func(target, token string) error {
		body, done := body, []byte("message_stop")
		if strings.HasSuffix(target, "/responses") {
			body, done = respBody, []byte("response.completed")
		}
		req, _ := http.NewRequest("POST", target, bytes.NewReader(body))
		req.Header.Set("content-type", "application/json")
		req.Header.Set("anthropic-version", "2023-06-01")
		if token != "" {
			req.Header.Set("x-api-key", token)
			req.Header.Set("Authorization", "Bearer "+token) // OpenAI's spelling
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Contains(b, done) {
			return fmt.Errorf("%s: HTTP %d %.200s", target, resp.StatusCode, b)
		}
		return nil
	}
	measure := func(name, target, token string) (Dist, error) {
		for i := 0; i < 50; i++ { // warm the connections
			if err := call(target, token); err != nil {
				return Dist{}, err
			}
		}
		ds := make([]time.Duration, 0, n)
		for i := 0; i < n; i++ {
			s := time.Now()
			if err := call(target, token); err != nil {
				return Dist{}, err
			}
			ds = append(ds, time.Since(s))
		}
		d := dist(ds)
		fmt.Fprintf(os.Stderr, "%-7s p50 %.3f ms  p99 %.3f ms  mean %.3f ms (%d calls)\n", name, d.P50, d.P99, d.Mean, d.N)
		return d, nil
	}
	out := map[string]any{"bodyBytes": len(body)}
	direct, err := measure("direct", url+"/v1/messages", "bench")
	if err != nil {
		return err
	}
	out["direct"] = direct

	g := gateway.New(nil)
	if err := g.Start(); err != nil {
		return err
	}
	defer g.Close()
	fw := model.NewAnthropic(url, "bench", hc).(model.Forwarder)
	tok, release := g.Register("bench-proxy", gateway.WireAnthropic, &proxyRun{fw: fw}, nil)
	proxy, err := measure("proxy", g.URL()+"/v2/gateway/anthropic/v1/messages", tok)
	release()
	if err != nil {
		return err
	}
	out["proxy"] = proxy

	dir, err := os.MkdirTemp("", "agentrun-bench-gateway")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sr, err := newStepRun(ctx, dir, fw)
	if err != nil {
		return err
	}
	defer sr.st.Close()
	tok, release = g.Register("bench-step", gateway.WireAnthropic, sr, nil)
	step, err := measure("step", g.URL()+"/v2/gateway/anthropic/v1/messages", tok)
	release()
	if err != nil {
		return err
	}
	out["step"] = step

	responses, err := measure("responses", url+"/v1/responses", "bench")
	if err != nil {
		return err
	}
	out["responses"] = responses
	tok, release = g.Register("bench-translated", gateway.WireResponses, &translateRun{fw: fw}, nil)
	translated, err := measure("translated", g.URL()+"/v2/gateway/openai/v1/responses", tok)
	release()
	if err != nil {
		return err
	}
	out["translated"] = translated
	out["addedTranslatedMs"] = map[string]float64{"p50": translated.P50 - responses.P50, "p99": translated.P99 - responses.P99}
	steps, err := sr.st.ListSteps(ctx, "bench-step")
	if err != nil || len(steps) != n+50 {
		return fmt.Errorf("the journal holds %d steps, want %d (%v)", len(steps), n+50, err)
	}
	out["addedProxyMs"] = map[string]float64{"p50": proxy.P50 - direct.P50, "p99": proxy.P99 - direct.P99}
	out["addedStepMs"] = map[string]float64{"p50": step.P50 - direct.P50, "p99": step.P99 - direct.P99}
	fmt.Printf("path    p50 ms   p99 ms   (added p50 / p99)\n")
	fmt.Printf("direct  %7.3f  %7.3f\n", direct.P50, direct.P99)
	fmt.Printf("proxy   %7.3f  %7.3f  (+%.3f / +%.3f)\n", proxy.P50, proxy.P99, proxy.P50-direct.P50, proxy.P99-direct.P99)
	fmt.Printf("step    %7.3f  %7.3f  (+%.3f / +%.3f)\n", step.P50, step.P99, step.P50-direct.P50, step.P99-direct.P99)
	fmt.Printf("responses  %7.3f  %7.3f\n", responses.P50, responses.P99)
	fmt.Printf("translated %7.3f  %7.3f  (+%.3f / +%.3f over responses)\n", translated.P50, translated.P99, translated.P50-responses.P50, translated.P99-responses.P99)
	if withHarness {
		ms, err := harnessStart(url, harnessName)
		if err != nil {
			return err
		}
		out["harnessStartToFirstModelCallMs"] = ms
		fmt.Printf("%s run: creation to its first model call %.0f ms\n", harnessName, ms)
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
	return nil
}

// proxyRun forwards each call as the host does, without the journal.
type proxyRun struct{ fw model.Forwarder }

func (p *proxyRun) ModelCall(ctx context.Context, c gateway.Call) (gateway.Reply, error) {
	resp, err := p.fw.Forward(ctx, c.Path, c.Header, c.Body)
	if err != nil {
		return gateway.Reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return gateway.Reply{}, err
	}
	_ = gateway.Summarize(c.Wire, b)
	return gateway.Reply{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Body: b}, nil
}

// translateRun is proxyRun for a Responses call on an Anthropic provider: the call translated to
// the Messages API, the answer translated back, as the host does for codex (no journal).
type translateRun struct{ fw model.Forwarder }

func (p *translateRun) ModelCall(ctx context.Context, c gateway.Call) (gateway.Reply, error) {
	tr, err := translate.Request(c.Body)
	if err != nil {
		return gateway.Reply{}, &gateway.BadRequest{Msg: err.Error()}
	}
	resp, err := p.fw.Forward(ctx, "/messages", http.Header{"Content-Type": {"application/json"}, "Accept": {"text/event-stream"}}, tr.Body)
	if err != nil {
		return gateway.Reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return gateway.Reply{}, err
	}
	_ = gateway.Summarize(gateway.WireAnthropic, b)
	out, ctype, err := tr.Response(b)
	if err != nil {
		return gateway.Reply{}, err
	}
	return gateway.Reply{Status: resp.StatusCode, ContentType: ctype, Body: out}, nil
}

func (p *translateRun) CountTokens(ctx context.Context, c gateway.Call) (gateway.Reply, error) {
	return gateway.Reply{}, fmt.Errorf("no counts")
}

func (p *translateRun) CallTool(context.Context, string, json.RawMessage) (string, bool, error) {
	return "", true, fmt.Errorf("no tools")
}

func (p *proxyRun) CountTokens(ctx context.Context, c gateway.Call) (gateway.Reply, error) {
	return p.ModelCall(ctx, c)
}

func (p *proxyRun) CallTool(context.Context, string, json.RawMessage) (string, bool, error) {
	return "", true, fmt.Errorf("no tools")
}

// stepRun makes each call a journal step with its credit reservation, on a real SQLite store.
type stepRun struct {
	proxyRun
	st    *sqlite.Store
	lease store.Lease
	j     *journal.Journal
	i     int
}

func newStepRun(ctx context.Context, dir string, fw model.Forwarder) (*stepRun, error) {
	st, err := sqlite.Open(filepath.Join(dir, "agentrun.db"))
	if err != nil {
		return nil, err
	}
	run := &api.AgentRun{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "AgentRun"}}
	run.Metadata.Name = "bench-step"
	run.Spec.Agent = "bench"
	run.Status.Phase = api.PhaseQueued
	if err := st.CreateRun(ctx, run); err != nil {
		return nil, err
	}
	leases, err := st.ClaimRuns(ctx, "bench", 1, time.Hour)
	if err != nil || len(leases) != 1 {
		return nil, fmt.Errorf("claim the bench run: %d leases, %v", len(leases), err)
	}
	j, err := journal.Open(ctx, st, leases[0])
	if err != nil {
		return nil, err
	}
	return &stepRun{proxyRun: proxyRun{fw: fw}, st: st, lease: leases[0], j: j}, nil
}

func (s *stepRun) ModelCall(ctx context.Context, c gateway.Call) (gateway.Reply, error) {
	key := fmt.Sprintf("t%d/model", s.i)
	s.i++
	if _, err := s.st.ReserveCredits(ctx, s.lease, store.Reservation{Run: "bench-step", StepKey: key, Attempt: 1, Amount: 1000}); err != nil {
		return gateway.Reply{}, err
	}
	var rep gateway.Reply
	_, err := s.j.Do(ctx, journal.Spec{Key: key, Kind: "model", Title: "model call", Args: map[string]any{"bytes": len(c.Body)}, HashOf: journal.Encoded(c.Body), Safe: true, Bill: true},
		func(ctx context.Context) (any, *int64, error) {
			r, err := s.proxyRun.ModelCall(ctx, c)
			rep = r
			cost := int64(100)
			return map[string]any{"httpStatus": r.Status, "body": r.Body}, &cost, err
		})
	return rep, err
}

// harnessStart builds and starts agentrun serve against the scripted server, creates a
// run of the harness name and returns the milliseconds from its creation to its first model call.
func harnessStart(modelURL, name string) (float64, error) {
	dir, err := os.MkdirTemp("", "agentrun-bench-harness")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "agentrun")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/agentrun").CombinedOutput(); err != nil {
		return 0, fmt.Errorf("build agentrun (run from the module root): %v\n%s", err, out)
	}
	data := filepath.Join(dir, "data")
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--data", data, "--router", "rules")
	cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=bench", "ANTHROPIC_BASE_URL="+modelURL)
	var logs bytes.Buffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var base, token string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && base == ""; time.Sleep(50 * time.Millisecond) {
		var info struct {
			URL string `json:"url"`
		}
		if b, err := os.ReadFile(filepath.Join(data, "server.json")); err == nil && json.Unmarshal(b, &info) == nil {
			if resp, err := http.Get(info.URL + "/healthz"); err == nil {
				resp.Body.Close()
				base = info.URL
			}
		}
	}
	if base == "" {
		return 0, fmt.Errorf("agentrun serve did not start:\n%s", logs.String())
	}
	t, _ := os.ReadFile(filepath.Join(data, "token"))
	token = strings.TrimSpace(string(t))
	do := func(method, path, body string) error {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("%s %s: HTTP %d %s", method, path, resp.StatusCode, b)
		}
		return nil
	}
	if err := do("PUT", "/v2/agents/b", `{"metadata":{"name":"b"},"spec":{"harness":"`+name+`","tools":["write"]}}`); err != nil {
		return 0, err
	}
	calls := 0
	if c, err := fetchCalls(modelURL); err == nil {
		calls = len(c)
	}
	created := time.Now()
	if err := do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"b1"},"spec":{"agent":"b","input":"Say hello"}}`); err != nil {
		return 0, err
	}
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		c, err := fetchCalls(modelURL)
		if err == nil && len(c) > calls {
			return float64(c[calls].Time.Sub(created).Microseconds()) / 1000, nil
		}
	}
	return 0, fmt.Errorf("the harness made no model call within 5 minutes:\n%s", logs.String())
}

func fetchCalls(url string) ([]fake.Call, error) {
	resp, err := http.Get(url + "/_fake/calls")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var calls []fake.Call
	err = json.NewDecoder(resp.Body).Decode(&calls)
	return calls, err
}
