package agent

import (
	"strings"
	"testing"

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
