package agent

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"agentrun.dev/agentrun/internal/gateway"
	"agentrun.dev/agentrun/internal/model"
	"agentrun.dev/agentrun/internal/model/fake"
)

type pieces struct {
	mu       sync.Mutex
	got      []string
	restarts int
}

func (p *pieces) Text(s string) { p.mu.Lock(); p.got = append(p.got, s); p.mu.Unlock() }
func (p *pieces) Restart()      { p.mu.Lock(); p.restarts++; p.mu.Unlock() }

// A harness's model call, forwarded to the vendor as it is, tells the run's text sink each piece
// of the model's text as the vendor streams it, and the harness still gets the vendor's bytes.
func TestForwardTellsTheStreamedText(t *testing.T) {
	sc, err := fake.ParseScript([]byte(`
entries:
  - match: "*"
    turns:
      - text: "A reply long enough to come in several pieces over the stream."
`))
	if err != nil {
		t.Fatal(err)
	}
	srv, url, err := fake.Start(sc)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	p := model.NewAnthropic(url, "test-key", http.DefaultClient)
	d := &drive{log: slog.New(slog.DiscardHandler)}
	sink := &pieces{}
	ctx := model.WithTextSink(context.Background(), sink)
	body := []byte(`{"model":"claude-sonnet-4-5","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	hdr := http.Header{"Content-Type": {"application/json"}, "Accept": {"text/event-stream"}, "Anthropic-Version": {"2023-06-01"}}
	status, _, data, err := d.forward(ctx, p, gateway.Call{Wire: gateway.WireAnthropic, Path: "/messages", Header: hdr}, body)
	if err != nil || status != 200 {
		t.Fatalf("forward: %d %v", status, err)
	}
	want := "A reply long enough to come in several pieces over the stream."
	if got := strings.Join(sink.got, ""); got != want || len(sink.got) < 2 {
		t.Errorf("the sink was told %q in %d pieces, want %q in several", got, len(sink.got), want)
	}
	if s := gateway.Summarize(gateway.WireAnthropic, data); s.Text != want {
		t.Errorf("the harness's bytes say %q", s.Text)
	}
}
