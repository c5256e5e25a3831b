package journal

import (
	"encoding/json"
	"testing"
)

// An Encoded value hashes as the value it encodes, so a journal recorded with either replays.
func TestHashEncodedMatchesValue(t *testing.T) {
	v := map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": "hi <&>"}}, "max_tokens": 10}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Hash(Encoded(b)), Hash(v); got != want {
		t.Fatalf("Hash(Encoded) = %s, Hash(value) = %s", got, want)
	}
}
