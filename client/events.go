package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

func readAll(resp *http.Response) ([]byte, error) {
	return io.ReadAll(resp.Body)
}

// escapePath escapes each segment of a slash-separated path.
func escapePath(p string) string {
	segs := strings.Split(strings.TrimLeft(p, "/"), "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// Events is GET /v2/agentruns/NAME/events?after=AFTER: the timeline entries with seq > after. The
// server may return a page; call again with the last seq until it returns none.
func (c *Client) Events(ctx context.Context, run string, after int64) ([]Event, error) {
	var l struct {
		Items []Event `json:"items"`
	}
	q := url.Values{"after": {strconv.FormatInt(after, 10)}}
	if _, _, err := c.call(ctx, request{method: http.MethodGet, path: objectPath(AgentRuns, run, "events"), query: q}, &l); err != nil {
		return nil, fmt.Errorf("events of agentrun %q: %w", run, err)
	}
	return l.Items, nil
}

// SSEFrame is one server-sent event.
type SSEFrame struct {
	ID    string
	Event string
	Data  string
}

// SSEReader reads server-sent event frames from a stream.
type SSEReader struct {
	r *bufio.Reader
}

// NewSSEReader returns a reader of the frames in r.
func NewSSEReader(r io.Reader) *SSEReader {
	return &SSEReader{r: bufio.NewReader(r)}
}

// Next returns the next frame. Comment lines (": keepalive") are skipped; several data lines are
// joined with "\n"; a frame is dispatched by a blank line when it has any field (so a bare
// "event: end" frame counts). At the end of the stream it returns io.EOF, dropping an unfinished
// frame (the stream was cut mid-frame); other read errors are returned as they are.
func (s *SSEReader) Next() (SSEFrame, error) {
	var f SSEFrame
	var data []string
	hasData, seen := false, false
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				return SSEFrame{}, io.EOF
			}
			return SSEFrame{}, err
		}
		line = strings.TrimRight(line, "\n")
		line = strings.TrimSuffix(line, "\r")
		if line == "" {
			if !seen {
				continue
			}
			if hasData {
				f.Data = strings.Join(data, "\n")
			}
			return f, nil
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			f.ID, seen = value, true
		case "event":
			f.Event, seen = value, true
		case "data":
			data = append(data, value)
			hasData, seen = true, true
		}
	}
}

// EndEvent is the SSE event type the server sends, then closes, once the run has finished and every
// event was sent.
const EndEvent = "end"

// FollowEvents streams the run's timeline over SSE, calling fn for each event with seq > after, in
// order. When the connection drops it reconnects with Last-Event-ID, so no event is missed or seen
// twice. It returns nil when the server sends "event: end" (the run finished), fn's error if fn
// fails, the server's error if it refuses the stream (an *Error), the connection error if the
// first connection cannot be made, or ctx's error.
func (c *Client) FollowEvents(ctx context.Context, run string, after int64, fn func(Event) error) error {
	const idle = 75 * time.Second // the server sends keepalives more often than this
	backoff := 250 * time.Millisecond
	connected := false
	for {
		done, progressed, err := c.followOnce(ctx, run, &after, idle, fn)
		if done {
			return err
		}
		if err != nil && !connected {
			return err // the server was never reached
		}
		connected = true
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if progressed {
			backoff = 250 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		if backoff < 5*time.Second {
			backoff *= 2
		}
	}
}

// followOnce reads one SSE connection. done says FollowEvents should return err; otherwise the
// connection dropped (err set when it could not be made at all) and should be made again.
func (c *Client) followOnce(ctx context.Context, run string, after *int64, idle time.Duration, fn func(Event) error) (done, progressed bool, err error) {
	connCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	hdr := http.Header{"Accept": {"text/event-stream"}, "Cache-Control": {"no-cache"}}
	q := url.Values{}
	if *after > 0 {
		hdr.Set("Last-Event-ID", strconv.FormatInt(*after, 10))
		q.Set("after", strconv.FormatInt(*after, 10))
	}
	resp, err := c.do(connCtx, request{method: http.MethodGet, path: objectPath(AgentRuns, run, "events"), query: q, header: hdr})
	if err != nil {
		if _, ok := AsError(err); ok {
			return true, false, fmt.Errorf("follow events of agentrun %q: %w", run, err)
		}
		return false, false, fmt.Errorf("follow events of agentrun %q: %w", run, err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		return true, false, fmt.Errorf("follow events of agentrun %q: the server answered %q, not an event stream", run, ct)
	}
	timer := time.AfterFunc(idle, cancel)
	defer timer.Stop()
	sr := NewSSEReader(&activityReader{r: resp.Body, touch: func() { timer.Reset(idle) }})
	for {
		f, err := sr.Next()
		if err != nil {
			return false, progressed, nil
		}
		if f.Event == EndEvent {
			return true, progressed, nil
		}
		if f.Data == "" {
			continue
		}
		var ev Event
		if err := json.Unmarshal([]byte(f.Data), &ev); err != nil {
			return true, progressed, fmt.Errorf("follow events of agentrun %q: bad event %q: %w", run, f.Data, err)
		}
		if ev.Seq == 0 && f.ID != "" {
			ev.Seq, _ = strconv.ParseInt(f.ID, 10, 64)
		}
		if ev.Type == "" {
			ev.Type = EventType(f.Event)
		}
		if ev.Seq != 0 && ev.Seq <= *after {
			continue
		}
		progressed = true
		if ev.Seq > *after {
			*after = ev.Seq
		}
		if err := fn(ev); err != nil {
			return true, progressed, err
		}
	}
}

// activityReader calls touch after every read that returned data.
type activityReader struct {
	r     io.Reader
	touch func()
}

func (a *activityReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if n > 0 {
		a.touch()
	}
	return n, err
}
