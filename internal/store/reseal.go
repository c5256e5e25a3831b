package store

import (
	"context"
	"errors"
	"fmt"
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

// Sealed is one secret's sealed value as a backend read it for a reseal.
type Sealed struct {
	Name  string
	Value []byte
}

// ResealAll is a reseal's rule inside the backend's transaction, for both backends: every value
// is resealed (reseal) before any is written (write), so an old key that opens one value but not
// the next writes nothing; written reports each value written. It returns how many were.
func ResealAll(vals []Sealed, reseal func(name string, sealed []byte) ([]byte, error), write func(name string, sealed []byte) error, written func(done, total int)) (int, error) {
	out := make([][]byte, len(vals))
	for i, v := range vals {
		b, err := reseal(v.Name, v.Value)
		if err != nil {
			return 0, err
		}
		out[i] = b
	}
	for i, v := range vals {
		if err := write(v.Name, out[i]); err != nil {
			return 0, fmt.Errorf("write secret %s: %w", v.Name, err)
		}
		if written != nil {
			written(i+1, len(vals))
		}
	}
	return len(vals), nil
}
