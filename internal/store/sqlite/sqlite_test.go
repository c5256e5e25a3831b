package sqlite_test

import (
	"path/filepath"
	"testing"

	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/store/sqlite"
	"agentrun.dev/agentrun/internal/store/storetest"
)

// TestConformance runs the shared store suite against a fresh database file per subtest.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := sqlite.Open(filepath.Join(t.TempDir(), "agentrun.db"))
		if err != nil {
			t.Fatalf("sqlite.Open: %v", err)
		}
		return s // storetest.Run closes it
	})
}
