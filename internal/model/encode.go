package model

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
)

// Tools is a list of tool definitions encoded once for every request that carries it. A drive
// makes one per list it sends and sets it on each Request (Request.Encoded): the definitions (the
// default tools alone are ~7 kB of schemas, which encoding/json re-validates byte by byte) are
// then encoded once per drive instead of twice per call (the journal's hash, the vendor's body).
type Tools struct {
	defs []ToolDef

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

// neutralJSON is json.Marshal(defs), once.
func (t *Tools) neutralJSON() ([]byte, error) {
	t.neutralOnce.Do(func() { t.neutral, t.neutralErr = json.Marshal(t.defs) })
	return t.neutral, t.neutralErr
}

// anthropicJSON is the Messages API's tools array for defs, once.
func (t *Tools) anthropicJSON() ([]byte, error) {
	t.antOnce.Do(func() { t.ant, t.antErr = json.Marshal(antTools(t.defs)) })
	return t.ant, t.antErr
}

// MarshalRequest returns exactly json.Marshal(req)'s bytes (the journal hashes them: a change of
// one byte would make every model call of a run in flight a divergence on replay), with the tools
// taken from req.Encoded when it encodes req.Tools.
func MarshalRequest(req *Request) ([]byte, error) {
	if !req.Encoded.of(req.Tools) {
		return json.Marshal(req)
	}
	tools, err := req.Encoded.neutralJSON()
	if err != nil {
		return nil, err
	}
	// The fields in Request's order, each with its tag's name and omitempty rule.
	b := make([]byte, 0, len(tools)+512)
	b = append(b, `{"model":`...)
	if b, err = appendJSON(b, req.Model); err != nil {
		return nil, err
	}
	if req.System != "" {
		b = append(b, `,"system":`...)
		if b, err = appendJSON(b, req.System); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"messages":`...)
	if b, err = appendJSON(b, req.Messages); err != nil {
		return nil, err
	}
	b = append(b, `,"tools":`...)
	b = append(b, tools...)
	if req.MaxTokens != 0 {
		b = append(b, `,"maxTokens":`...)
		b = strconv.AppendInt(b, int64(req.MaxTokens), 10)
	}
	if req.Stream {
		b = append(b, `,"stream":true`...)
	}
	if req.ToolChoice != "" {
		b = append(b, `,"toolChoice":`...)
		if b, err = appendJSON(b, req.ToolChoice); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// marshalAnthropic is json.Marshal(w)'s bytes, with w's tools taken from enc when it encodes req's.
func marshalAnthropic(w *antRequest, req *Request) ([]byte, error) {
	if !req.Encoded.of(req.Tools) {
		return json.Marshal(w)
	}
	tools, err := req.Encoded.anthropicJSON()
	if err != nil {
		return nil, err
	}
	// The fields in antRequest's order, each with its tag's name and omitempty rule.
	b := make([]byte, 0, len(tools)+512)
	b = append(b, `{"model":`...)
	if b, err = appendJSON(b, w.Model); err != nil {
		return nil, err
	}
	b = append(b, `,"max_tokens":`...)
	b = strconv.AppendInt(b, int64(w.MaxTokens), 10)
	if w.System != "" {
		b = append(b, `,"system":`...)
		if b, err = appendJSON(b, w.System); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"messages":`...)
	if b, err = appendJSON(b, w.Messages); err != nil {
		return nil, err
	}
	b = append(b, `,"tools":`...)
	b = append(b, tools...)
	if w.Stream {
		b = append(b, `,"stream":true`...)
	}
	if w.ToolChoice != nil {
		b = append(b, `,"tool_choice":`...)
		if b, err = appendJSON(b, w.ToolChoice); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

func appendJSON(b []byte, v any) ([]byte, error) {
	enc, err := json.Marshal(v)
	if err != nil {
		return b, fmt.Errorf("encode request: %w", err)
	}
	return append(b, enc...), nil
}
