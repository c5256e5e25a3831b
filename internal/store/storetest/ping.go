package storetest

import "testing"

// testPing: Ping answers on a working store and fails on a closed one (GET /healthz relies on it
// to tell a failing store from a working one).
func testPing(t *testing.T, open opener) {
	s := open(t)
	if err := s.Ping(bg); err != nil {
		t.Fatalf("Ping on a fresh store: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(bg); err == nil {
		t.Error("Ping on a closed store succeeded")
	}
}
