package model

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
)

// encodeCases are requests with every field set and unset, text a JSON encoder escapes (HTML,
// control characters, invalid UTF-8) and schemas written loosely (spaces the encoder compacts).
func encodeCases() []*Request {
	defs := []ToolDef{
		{Name: "read", Description: "Read a <file> & say \"what\" \u2028 it holds", InputSchema: json.RawMessage(`{ "type": "object",
			"properties": {"path": {"type": "string", "description": "a <path>"}} }`)},
		{Name: "ls", Description: "List"},
		{Name: "bad\xffutf8", Description: "tab\there", InputSchema: json.RawMessage(`{"type":"object"}`)},
	}
	msgs := []Message{
		userText("hello <b>&</b>\x01"),
		{Role: "assistant", Content: []Block{{Type: BlockText, Text: "calling"}, {Type: BlockToolUse, ID: "t1", Name: "read", Input: json.RawMessage(`{"path": "a.txt"}`)}}},
		{Role: "user", Content: []Block{{Type: BlockToolResult, ToolUseID: "t1", Content: "data", IsError: true,
			Images: []Image{{MediaType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}}}}}},
	}
	return []*Request{
		{Model: "m", Messages: msgs[:1], Tools: defs},
		{Model: "claude <x>", System: "be \"brief\" </script>", Messages: msgs, Tools: defs, MaxTokens: 8192, Stream: true, ToolChoice: "read"},
		{Model: "m", Messages: nil, Tools: defs[:1], MaxTokens: -1},
		{Model: "", System: "", Messages: []Message{}, Tools: defs[1:2]},
	}
}

func userText(s string) Message {
	return Message{Role: "user", Content: []Block{{Type: BlockText, Text: s}}}
}

// The journal hashes MarshalRequest's bytes: with the tools encoded once they must be exactly
// json.Marshal's, or every run in flight would diverge on replay.
func TestMarshalRequestIsJSONMarshal(t *testing.T) {
	for i, req := range encodeCases() {
		want, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		req.Encoded = EncodeTools(req.Tools)
		for range 2 { // the second time from the cache
			got, err := MarshalRequest(req)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("case %d:\n got %s\nwant %s", i, got, want)
			}
		}
	}
}

// A cache of another list (a copy, a prefix, none) is not used: the request's own tools are.
func TestMarshalRequestIgnoresAnotherList(t *testing.T) {
	req := encodeCases()[1]
	want, _ := json.Marshal(req)
	other := append([]ToolDef(nil), req.Tools...)
	other[0].Description = "changed"
	for _, enc := range []*Tools{EncodeTools(other), EncodeTools(req.Tools[:1]), EncodeTools(nil), nil} {
		req.Encoded = enc
		got, err := MarshalRequest(req)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("with a cache of %d other tools:\n got %s\nwant %s", len(enc.Defs()), got, want)
		}
	}
}

// The vendor's body is the same bytes with the tools encoded once as without.
func TestAnthropicBodyWithEncodedTools(t *testing.T) {
	a := &anthropic{}
	for i, req := range encodeCases() {
		req.Encoded = nil
		want, err := json.Marshal(a.wireRequest(req))
		if err != nil {
			t.Fatal(err)
		}
		req.Encoded = EncodeTools(req.Tools)
		parts, err := anthropicBody(a.wireRequest(req), req)
		if err != nil {
			t.Fatal(err)
		}
		got := bytes.Join(parts, nil)
		if !bytes.Equal(got, want) {
			t.Fatalf("case %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// MarshalRequest and anthropicBody write each field by hand: a field added to either struct
// must be added there too.
func TestEncodedFieldsKnown(t *testing.T) {
	if n := reflect.TypeFor[Request]().NumField(); n != 8 {
		t.Errorf("model.Request has %d fields; MarshalRequest writes 7 (and skips Encoded): update it and this count", n)
	}
	if n := reflect.TypeFor[antRequest]().NumField(); n != 7 {
		t.Errorf("antRequest has %d fields; anthropicBody writes 7: update it and this count", n)
	}
}

func BenchmarkMarshalRequest(b *testing.B) {
	req := encodeCases()[1]
	for _, c := range []struct {
		name string
		enc  *Tools
	}{{"json.Marshal", nil}, {"encoded", EncodeTools(req.Tools)}} {
		b.Run(c.name, func(b *testing.B) {
			req.Encoded = c.enc
			a := &anthropic{}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := MarshalRequest(req); err != nil {
					b.Fatal(err)
				}
				if _, err := anthropicBody(a.wireRequest(req), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// What a model call's journal hash costs: the request joined and hashed, against hashed as it
// is written (WriteRequest), with the tools encoded once in both.
func BenchmarkHashRequest(b *testing.B) {
	req := encodeCases()[1]
	req.Encoded = EncodeTools(req.Tools)
	b.Run("joined", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			enc, err := MarshalRequest(req)
			if err != nil {
				b.Fatal(err)
			}
			sha256.Sum256(enc)
		}
	})
	b.Run("written", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			h := sha256.New()
			if err := WriteRequest(h, req); err != nil {
				b.Fatal(err)
			}
			h.Sum(nil)
		}
	})
}

// Drives offering the same definitions share one encoding (a waiting run holds no copy of its
// own); a list that differs in any field, or only in a nil against an empty schema, does not.
func TestToolsEncodingShared(t *testing.T) {
	defs := encodeCases()[0].Tools
	same := append([]ToolDef(nil), defs...)
	a, b := EncodeTools(defs), EncodeTools(same)
	ja, _ := a.neutralJSON()
	jb, _ := b.neutralJSON()
	if &ja[0] != &jb[0] {
		t.Error("two drives with the same tools hold two encodings")
	}
	for _, change := range []func(d []ToolDef){
		func(d []ToolDef) { d[1].Name = "lsx" },
		func(d []ToolDef) { d[1].Description = "List!" },
		func(d []ToolDef) { d[0].InputSchema = json.RawMessage(`{"type":"object"}`) },
		func(d []ToolDef) { d[1].InputSchema = json.RawMessage{} },
	} {
		other := append([]ToolDef(nil), defs...)
		change(other)
		want, wantErr := json.Marshal(other)
		got, err := EncodeTools(other).neutralJSON()
		if !bytes.Equal(got, want) || (err == nil) != (wantErr == nil) {
			t.Errorf("a changed list encodes as %s (%v), want %s (%v)", got, err, want, wantErr)
		}
	}
}

// A request with encoded tools reaches the vendor as the same bytes, with its length, and a retry
// on a new connection (GetBody) sends them again.
func TestAnthropicSendsEncodedBody(t *testing.T) {
	req := encodeCases()[1]
	req.Stream = false
	want, _ := json.Marshal((&anthropic{}).wireRequest(req))
	var got [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.ContentLength != int64(len(b)) {
			t.Errorf("Content-Length %d for a body of %d bytes", r.ContentLength, len(b))
		}
		got = append(got, b)
		w.Header().Set("content-type", "application/json")
		io.WriteString(w, `{"id":"m","type":"message","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`)
	}))
	defer srv.Close()
	req.Encoded = EncodeTools(req.Tools)
	if _, err := NewAnthropic(srv.URL, "k", srv.Client()).Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	hreq, _ := http.NewRequest(http.MethodPost, srv.URL, http.NoBody)
	parts, _ := anthropicBody((&anthropic{}).wireRequest(req), req)
	bodyOf(hreq, parts, func() ([][]byte, error) { return anthropicBody((&anthropic{}).wireRequest(req), req) })
	first, _ := io.ReadAll(hreq.Body)
	// Read, the body holds none of what it sent (a run waiting on the reply holds no copy of
	// its request), and a retry's body is made again.
	if held := hreq.Body.(*sentBody).b; len(held) != 0 {
		t.Errorf("the body still holds %d parts once read", len(held))
	}
	again, _ := hreq.GetBody()
	second, _ := io.ReadAll(again)
	if len(got) != 1 || !bytes.Equal(got[0], want) || !bytes.Equal(first, want) || !bytes.Equal(second, want) {
		t.Errorf("sent %q, read %q then %q; want %s", got, first, second, want)
	}
}
