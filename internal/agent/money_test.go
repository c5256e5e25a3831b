package agent

import (
	"encoding/json"
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/journal"
	"agentrun.dev/agentrun/internal/model"
)

// The input bound never falls below the request's bytes: a token is at least a byte.
func TestInputBound(t *testing.T) {
	t.Parallel()
	req := &model.Request{Model: "m", System: strings.Repeat("s", 5000), Messages: []model.Message{userText(strings.Repeat("é", 1000))}}
	if b := inputBound(req); b < 5000+2000+inputOverhead {
		t.Errorf("inputBound = %d, below the bytes of the request", b)
	}
}

// A model call's recorded hash and the guard's bound come from the request's encoding hashed as
// it is written: they must be those of json.Marshal(req), or every run recorded before would
// diverge on replay, and the bound would not be the request's bytes.
func TestDigestRequestIsTheEncodingsHash(t *testing.T) {
	t.Parallel()
	defs := []model.ToolDef{{Name: "ls", Description: "List <files> & more", InputSchema: json.RawMessage(`{"type": "object"}`)}}
	for _, req := range []*model.Request{
		{Model: "m", System: "be brief", Messages: []model.Message{userText("hi \u2028 <b>")}, Tools: defs, MaxTokens: 100, Stream: true},
		{Model: "m", Messages: []model.Message{userText("no tools")}},
		{Model: "m", Messages: []model.Message{userText("forced")}, Tools: defs, ToolChoice: "ls"},
	} {
		whole, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		for _, enc := range []*model.Tools{nil, model.EncodeTools(req.Tools)} {
			req.Encoded = enc
			hash, size := digestRequest(req)
			if want := journal.Hash(journal.Encoded(whole)); string(hash) != want {
				t.Errorf("%s (tools encoded once: %v): hash %s, want %s", whole, enc != nil, hash, want)
			}
			if size != int64(len(whole)) {
				t.Errorf("%s (tools encoded once: %v): size %d, want %d", whole, enc != nil, size, len(whole))
			}
			if got, want := inputBoundOf(req, size), inputBound(req); got != want {
				t.Errorf("%s: bound %d from the digest, %d encoding again", whole, got, want)
			}
		}
	}
}
