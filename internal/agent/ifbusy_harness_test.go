package agent

import (
	"context"
	"errors"
	"testing"

	"agentrun.dev/agentrun/internal/gateway"
	"agentrun.dev/agentrun/internal/journal"
)

// A harness's model call a message stops keeps what its cut stream had reported (Anthropic's
// message_start carries the input tokens), for the stop step; the call's cost stays unknown.
func TestSteerForwardKeepsStreamedUsage(t *testing.T) {
	d := &drive{}
	partial := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":1200,\"output_tokens\":3}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"par\"}}\n\n"
	_, _, _, err := d.steerForward(context.Background(), gateway.WireAnthropic, func(ctx context.Context) (int, string, []byte, error) {
		d.steer.poke(1) // the message arrives while the stream is open
		<-ctx.Done()
		return 0, "", []byte(partial), ctx.Err()
	})
	if !errors.Is(err, journal.ErrStopped) {
		t.Fatalf("err = %v, want journal.ErrStopped", err)
	}
	if in, out := d.steer.takeStreamed(); in != 1200 || out != 3 {
		t.Errorf("streamed = %d in, %d out; want 1200, 3", in, out)
	}
	if in, out := d.steer.takeStreamed(); in != 0 || out != 0 {
		t.Errorf("takeStreamed did not clear: %d, %d", in, out)
	}
	// A call cut by something else (the drive ending) is not a stop and keeps nothing.
	ctx, cancel := context.WithCancel(context.Background())
	_, _, _, err = d.steerForward(ctx, gateway.WireAnthropic, func(cctx context.Context) (int, string, []byte, error) {
		cancel()
		<-cctx.Done()
		return 0, "", []byte(partial), cctx.Err()
	})
	if errors.Is(err, journal.ErrStopped) {
		t.Errorf("a cancelled drive's call was taken for a stop")
	}
	if in, _ := d.steer.takeStreamed(); in != 0 {
		t.Errorf("a call not stopped kept %d input tokens", in)
	}
}
