package model

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
)

// Tools is a list of tool definitions encoded once for every request that carries it. A drive
// makes one per list it sends and sets it on each Request (Request.Encoded): the definitions (the
// default tools alone are ~7 kB of schemas, which encoding/json re-validates byte by byte) are
// then not encoded again for each call, twice (the journal's hash, the vendor's body). The
// encodings are shared by every drive of the process offering the same definitions (sharedTools),
// so a thousand runs waiting on the model hold one copy, not one each.
type Tools struct {
	defs []ToolDef
	once sync.Once
	enc  *toolsEncoding
}

// toolsEncoding is one list's encodings, each made on first use.
type toolsEncoding struct {
	neutralOnce sync.Once
	neutral     []byte
	neutralErr  error

	antOnce sync.Once
	ant     []byte
	antErr  error
}

// EncodeTools returns the cache for defs. Nothing is encoded until a request needs it. defs must
// not be changed afterwards (a drive's lists never are).
func EncodeTools(defs []ToolDef) *Tools { return &Tools{defs: defs} }

// Defs is the list the cache encodes.
func (t *Tools) Defs() []ToolDef {
	if t == nil {
		return nil
	}
	return t.defs
}

// of reports whether t encodes exactly the list defs (the same elements of the same array, not a
// copy that may differ): a request whose Tools are another list is encoded in full.
func (t *Tools) of(defs []ToolDef) bool {
	return t != nil && len(t.defs) == len(defs) && len(defs) > 0 && &t.defs[0] == &defs[0]
}

// encoding is the shared encodings of t's definitions.
func (t *Tools) encoding() *toolsEncoding {
	t.once.Do(func() { t.enc = sharedTools.get(t.defs) })
	return t.enc
}

// neutralJSON is json.Marshal(defs), once.
func (t *Tools) neutralJSON() ([]byte, error) {
	e := t.encoding()
	e.neutralOnce.Do(func() { e.neutral, e.neutralErr = json.Marshal(t.defs) })
	return e.neutral, e.neutralErr
}

// anthropicJSON is the Messages API's tools array for defs, once.
func (t *Tools) anthropicJSON() ([]byte, error) {
	e := t.encoding()
	e.antOnce.Do(func() { e.ant, e.antErr = json.Marshal(antTools(t.defs)) })
	return e.ant, e.antErr
}

// toolsCacheMax bounds the distinct tool lists whose encodings the process keeps.
const toolsCacheMax = 256

// sharedTools are the encodings of the tool lists drives offered, by a hash of every field of
// every definition: two lists with the same hash encode to the same bytes.
var sharedTools toolsCache

type toolsCache struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]*toolsEncoding
}

func (c *toolsCache) get(defs []ToolDef) *toolsEncoding {
	h := sha256.New()
	var n [8]byte
	field := func(b []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	for _, d := range defs {
		field([]byte(d.Name))
		field([]byte(d.Description))
		// A nil schema encodes as null, an empty one fails: they are not the same list.
		if d.InputSchema == nil {
			h.Write([]byte{0})
		} else {
			h.Write([]byte{1})
		}
		field(d.InputSchema)
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.m[key]; e != nil {
		return e
	}
	if c.m == nil || len(c.m) >= toolsCacheMax {
		c.m = map[[sha256.Size]byte]*toolsEncoding{}
	}
	e := &toolsEncoding{}
	c.m[key] = e
	return e
}

// MarshalRequest returns exactly json.Marshal(req)'s bytes (the journal hashes them: a change of
// one byte would make every model call of a run in flight a divergence on replay), with the tools
// taken from req.Encoded when it encodes req.Tools.
func MarshalRequest(req *Request) ([]byte, error) {
	var b bytes.Buffer
	if err := WriteRequest(&b, req); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// WriteRequest writes MarshalRequest's bytes to w in parts, without joining them: a model call
// needs only their hash and length (the journal, the cost guard), and joining them copied the
// shared tools' encoding into every call's own buffer (a fifth of what a long run allocated).
func WriteRequest(w io.Writer, req *Request) error {
	if !req.Encoded.of(req.Tools) {
		b, err := json.Marshal(req)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	tools, err := req.Encoded.neutralJSON()
	if err != nil {
		return err
	}
	e := encoders.Get().(*partEncoder)
	defer e.done()
	// The fields in Request's order, each with its tag's name and omitempty rule.
	e.raw(`{"model":`)
	e.value(req.Model)
	if req.System != "" {
		e.raw(`,"system":`)
		e.value(req.System)
	}
	e.raw(`,"messages":`)
	e.value(req.Messages)
	e.raw(`,"tools":`)
	if e.err == nil {
		if err := e.flush(w); err != nil {
			return err
		}
		if _, err := w.Write(tools); err != nil {
			return err
		}
	}
	if req.MaxTokens != 0 {
		e.raw(`,"maxTokens":`)
		e.buf.Write(strconv.AppendInt(e.num[:0], int64(req.MaxTokens), 10))
	}
	if req.Stream {
		e.raw(`,"stream":true`)
	}
	if req.ToolChoice != "" {
		e.raw(`,"toolChoice":`)
		e.value(req.ToolChoice)
	}
	e.raw("}")
	if e.err != nil {
		return fmt.Errorf("encode request: %w", e.err)
	}
	return e.flush(w)
}

// partEncoder encodes a request's parts into one reused buffer, each exactly as json.Marshal
// encodes it (json.Encoder's output is json.Marshal's with a newline after it).
type partEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
	num [20]byte
	err error
}

var encoders = sync.Pool{New: func() any {
	e := &partEncoder{}
	e.enc = json.NewEncoder(&e.buf)
	return e
}}

func (e *partEncoder) raw(s string) { e.buf.WriteString(s) }

func (e *partEncoder) value(v any) {
	if e.err != nil {
		return
	}
	if e.err = e.enc.Encode(v); e.err == nil {
		e.buf.Truncate(e.buf.Len() - 1) // the Encoder's newline
	}
}

// flush writes what is buffered to w and empties the buffer.
func (e *partEncoder) flush(w io.Writer) error {
	_, err := w.Write(e.buf.Bytes())
	e.buf.Reset()
	return err
}

// done returns e to the pool, empty (a buffer grown past maxPooledPart is let go).
func (e *partEncoder) done() {
	e.buf.Reset()
	if e.buf.Cap() > maxPooledPart {
		e.buf = bytes.Buffer{}
	}
	e.err = nil
	encoders.Put(e)
}

// maxPooledPart bounds the buffer a pooled encoder keeps between requests: a conversation of a
// megabyte is encoded in a buffer of its own, then let go.
const maxPooledPart = 256 << 10

// anthropicBody is json.Marshal(w)'s bytes in parts, with w's tools taken from req.Encoded when it
// encodes req's: the middle part is then the encoding every drive with these tools shares, so a
// call waiting on its reply keeps only its own messages (net/http keeps the body for a retry).
func anthropicBody(w *antRequest, req *Request) ([][]byte, error) {
	if !req.Encoded.of(req.Tools) {
		b, err := json.Marshal(w)
		return [][]byte{b}, err
	}
	tools, err := req.Encoded.anthropicJSON()
	if err != nil {
		return nil, err
	}
	// The fields in antRequest's order, each with its tag's name and omitempty rule. The messages
	// are encoded in a pooled buffer and copied once into the head, which is made to size.
	e := encoders.Get().(*partEncoder)
	defer e.done()
	if e.value(w.Messages); e.err != nil {
		return nil, fmt.Errorf("encode request: %w", e.err)
	}
	msgs := e.buf.Bytes()
	head := make([]byte, 0, len(msgs)+len(w.Model)+len(w.System)+64)
	head = append(head, `{"model":`...)
	if head, err = appendJSON(head, w.Model); err != nil {
		return nil, err
	}
	head = append(head, `,"max_tokens":`...)
	head = strconv.AppendInt(head, int64(w.MaxTokens), 10)
	if w.System != "" {
		head = append(head, `,"system":`...)
		if head, err = appendJSON(head, w.System); err != nil {
			return nil, err
		}
	}
	head = append(head, `,"messages":`...)
	head = append(head, msgs...)
	head = append(head, `,"tools":`...)
	var tail []byte
	if w.Stream {
		tail = append(tail, `,"stream":true`...)
	}
	if w.ToolChoice != nil {
		tail = append(tail, `,"tool_choice":`...)
		if tail, err = appendJSON(tail, w.ToolChoice); err != nil {
			return nil, err
		}
	}
	return [][]byte{head, tools, append(tail, '}')}, nil
}

// bodyOf makes parts hreq's body. Once sent, the body holds none of them: a run waits seconds
// on its call, and every waiting run holding the encoded conversation it sent cost a few kB
// each. A retry the transport makes itself (a stream refused before it was read) asks for the
// body again (GetBody), and encode makes it again, as it made parts.
func bodyOf(hreq *http.Request, parts [][]byte, encode func() ([][]byte, error)) {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	hreq.ContentLength = int64(n)
	hreq.Body = &sentBody{b: parts}
	hreq.GetBody = func() (io.ReadCloser, error) {
		again, err := encode()
		if err != nil {
			return nil, err
		}
		return &sentBody{b: again}, nil
	}
}

// sentBody reads its parts once, letting go of each as it is read (net.Buffers), and of what is
// left when closed.
type sentBody struct{ b net.Buffers }

func (s *sentBody) Read(p []byte) (int, error) { return s.b.Read(p) }

func (s *sentBody) Close() error {
	s.b = nil
	return nil
}

func appendJSON(b []byte, v any) ([]byte, error) {
	enc, err := json.Marshal(v)
	if err != nil {
		return b, fmt.Errorf("encode request: %w", err)
	}
	return append(b, enc...), nil
}
