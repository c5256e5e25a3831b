package store

import "context"

// leaseCheckKey keys the lease check a runner puts in a drive's context.
type leaseCheckKey struct{}

// WithLeaseCheck returns ctx carrying check, which reports (with an error wrapping ErrFenced)
// that the holder of the run's lease may no longer start work on it: the runner's self-fence
// deadline has passed. The runner sets it on every drive; CheckLease reads it.
func WithLeaseCheck(ctx context.Context, check func() error) context.Context {
	return context.WithValue(ctx, leaseCheckKey{}, check)
}

// CheckLease asks the check WithLeaseCheck put in ctx (nil when there is none). The journal calls
// it right before a step's effect, after the step's intent is committed: the check reads the
// clock itself, so a step never starts past the self-fence deadline even when the goroutine
// that cancels late drives has not been scheduled yet.
func CheckLease(ctx context.Context) error {
	if check, ok := ctx.Value(leaseCheckKey{}).(func() error); ok {
		return check()
	}
	return nil
}
