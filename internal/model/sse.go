package model

import (
	"bufio"
	"io"
	"strings"
	"sync"
)

// sseEvent is one server-sent event.
type sseEvent struct {
	Event string
	Data  string
}

// sseReader reads server-sent events (https://html.spec.whatwg.org/multipage/server-sent-events.html):
// "field: value" lines, events ended by a blank line, comment lines starting with ':' (OpenRouter sends
// them as keep-alives).
type sseReader struct {
	r *bufio.Reader
}

func newSSEReader(r io.Reader) *sseReader {
	br := sseBufs.Get().(*bufio.Reader)
	br.Reset(r)
	return &sseReader{r: br}
}

// sseBufs keeps the readers' buffers for the next stream (allocating and zeroing one per model
// call showed in the runner's profile). 8 KiB each: a buffer is held by every stream in flight for
// as long as the model takes, and at 64 KiB 10,000 runs waiting on the model held 640 MB in them;
// ReadString collects a line longer than the buffer, so it bounds nothing.
var sseBufs = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 8<<10) }}

// release returns the buffer for reuse; s must not be used afterwards.
func (s *sseReader) release() {
	if s.r == nil {
		return
	}
	s.r.Reset(nil)
	sseBufs.Put(s.r)
	s.r = nil
}

// Next returns the next event, or io.EOF when the stream ended cleanly between events.
func (s *sseReader) Next() (sseEvent, error) {
	var ev sseEvent
	var data []string
	seen := false
	for {
		line, err := s.r.ReadString('\n')
		if err != nil && (err != io.EOF || line == "") {
			if err == io.EOF && seen {
				// A last event without its blank line still counts.
				ev.Data = strings.Join(data, "\n")
				return ev, nil
			}
			if err == io.EOF && !seen {
				return ev, io.EOF
			}
			return ev, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if !seen {
				continue
			}
			ev.Data = strings.Join(data, "\n")
			return ev, nil
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			ev.Event = value
			seen = true
		case "data":
			data = append(data, value)
			seen = true
		}
	}
}
