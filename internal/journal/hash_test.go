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

// A Hasher fed an encoding in parts (a request's head, the shared tools, its tail) records the
// hash of the whole, so a call hashed that way replays against one hashed whole, and back.
func TestHasherMatchesHashOfTheWhole(t *testing.T) {
	whole := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"name":"ls"}],"stream":true}`)
	for _, cuts := range [][]int{nil, {0}, {10}, {10, 50, 51}, {len(whole)}} {
		h := NewHasher()
		prev := 0
		for _, c := range append(cuts, len(whole)) {
			h.Write(whole[prev:c])
			prev = c
		}
		if got, want := string(h.Hashed()), Hash(Encoded(whole)); got != want {
			t.Errorf("cut at %v: Hasher says %s, Hash of the whole %s", cuts, got, want)
		}
		if h.Len() != int64(len(whole)) {
			t.Errorf("cut at %v: Len %d, want %d", cuts, h.Len(), len(whole))
		}
	}
	if got, want := string(NewHasher().Hashed()), Hash(Encoded(nil)); got != want {
		t.Errorf("empty Hasher says %s, Hash of nothing %s", got, want)
	}
}
