package store

import (
	"context"
	"errors"
)

// ErrInUse is returned by ResealSecrets while a serve or runner process holds the store in use.
var ErrInUse = errors.New("the store is in use by a running agentrun process")

// Resealer is a store whose sealed secrets can be rotated to a new seal key (`agentrun secrets
// reseal`). The rotation is offline: every serve and runner process holds the store in use for
// as long as it runs (a shared lock: any number at once), and a reseal runs only while none does,
// holding the store to itself until it commits, so no process ever reads or writes a secret
// under a key the store is being moved off. Both backends implement it.
type Resealer interface {
	// HoldInUse marks the store in use by this process until the store closes. While a reseal
	// runs it waits (calling waiting once, to say so) until the reseal ends or ctx does. A
	// process the system kills lets go of it.
	HoldInUse(ctx context.Context, waiting func()) error
	// ResealSecrets replaces every secret's sealed value with reseal(name, sealed), in one
	// transaction: reseal is called for every secret before anything is written, an error from
	// it writes nothing, and a process killed during the writes leaves every value as it was.
	// It fails with ErrInUse (saying who holds it, where the backend can tell) while any process
	// holds the store in use. written, when not nil, is called after each value written. It
	// returns how many secrets were resealed.
	ResealSecrets(ctx context.Context, reseal func(name string, sealed []byte) ([]byte, error), written func(done, total int)) (int, error)
}
