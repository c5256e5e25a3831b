package postgres

import (
	"fmt"
	"testing"
	"time"
)

// The model's live text between two processes' stores of one deployment: what one sends, the
// other's OnText is handed, in order; a store of another deployment (another schema of the same
// database) is handed none of it.
func TestTextRelay(t *testing.T) {
	base, admin := testDB(t)
	u := freshSchema(t, base, admin)
	runner, server, other := mustOpen(t, u), mustOpen(t, u), mustOpen(t, freshSchema(t, base, admin))
	defer runner.Close()
	defer server.Close()
	defer other.Close()
	got := make(chan string, 100)
	server.OnText(func(p []byte) { got <- string(p) })
	leaked := make(chan string, 100)
	other.OnText(func(p []byte) { leaked <- string(p) })
	for i := range 5 {
		runner.SendText([]byte(fmt.Sprintf(`{"piece":%d}`, i)))
	}
	for i := range 5 {
		select {
		case p := <-got:
			if want := fmt.Sprintf(`{"piece":%d}`, i); p != want {
				t.Errorf("piece %d: %q, want %q", i, p, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("piece %d never arrived", i)
		}
	}
	select {
	case p := <-leaked:
		t.Errorf("another deployment's store was handed %q", p)
	case <-time.After(300 * time.Millisecond):
	}
}
