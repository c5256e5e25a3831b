package store

import (
	"errors"
	"fmt"
)

// BinaryVersion is the agentrun version of this process (set once at start-up by the app). The
// store records it beside each migration it applies, so an older process refused by a newer
// schema can say which agentrun it needs.
var BinaryVersion = "dev"

// ErrSchemaNewer: the store's schema was migrated by a newer agentrun than this process.
var ErrSchemaNewer = errors.New("store schema is newer than this agentrun")

// Schema is a store's schema version beside what this binary knows.
type Schema struct {
	// Version is the highest migration the store has applied; Known the highest this binary has.
	Version int `json:"version"`
	Known   int `json:"known"`
	// WrittenBy is the agentrun version that applied Version ("" when that agentrun did not say).
	WrittenBy string `json:"writtenBy,omitempty"`
}

// Check refuses a schema newer than this binary knows, naming both versions and, when the store
// recorded it, the agentrun that migrated it: an older process must not write a newer schema's
// tables (it would miss columns and rules it does not know).
func (s Schema) Check() error {
	if s.Version <= s.Known {
		return nil
	}
	need := "a newer agentrun"
	if s.WrittenBy != "" {
		need = "agentrun " + s.WrittenBy + " or later"
	}
	return fmt.Errorf("%w: the store is at schema version %d, this agentrun (%s) knows schema versions up to %d: upgrade this process to %s (every process of a deployment upgrades together)",
		ErrSchemaNewer, s.Version, BinaryVersion, s.Known, need)
}

// Current reports whether the store's schema is exactly the one this binary knows (readiness:
// migrations are current).
func (s Schema) Current() error {
	if err := s.Check(); err != nil {
		return err
	}
	if s.Version < s.Known {
		return fmt.Errorf("store schema is version %d, this agentrun knows %d: migrations not applied", s.Version, s.Known)
	}
	return nil
}
