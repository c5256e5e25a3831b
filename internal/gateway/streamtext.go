package gateway

import (
	"bytes"
	"io"
)

// maxLine bounds the line StreamText holds while it looks for text: an event line longer than
// this (a huge tool input) is passed through unread.
const maxLine = 1 << 20

// StreamText returns a reader of body, a vendor's answer of wire, that tells text each piece of
// the model's text as the bytes go by (the SSE events Summarize reads for the reply's text), so
// people can watch a harness's call while it streams. The bytes read are body's, unchanged.
func StreamText(wire Wire, body io.Reader, text func(string)) io.Reader {
	return &textTee{wire: wire, r: body, text: text}
}

type textTee struct {
	wire Wire
	r    io.Reader
	text func(string)
	line []byte
	skip bool // the current line grew past maxLine
}

func (t *textTee) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	for b := p[:n]; len(b) > 0; {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			t.add(b)
			break
		}
		t.add(b[:i])
		t.endLine()
		b = b[i+1:]
	}
	return n, err
}

func (t *textTee) add(b []byte) {
	if t.skip {
		return
	}
	if len(t.line)+len(b) > maxLine {
		t.skip, t.line = true, t.line[:0]
		return
	}
	t.line = append(t.line, b...)
}

func (t *textTee) endLine() {
	line := bytes.TrimSuffix(t.line, []byte("\r"))
	skip := t.skip
	t.line, t.skip = t.line[:0], false
	if skip {
		return
	}
	data, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return
	}
	var s Summary
	s.event(t.wire, data)
	if s.Text != "" {
		t.text(s.Text)
	}
}
