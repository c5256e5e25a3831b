package model

import (
	"context"
	"time"
)

// RetryAttempts is how many times Retry tries a model call in all.
const RetryAttempts = 4

// Retry runs call until it succeeds, fails for good (retry false), or has been tried
// RetryAttempts times, waiting a backoff that doubles from 500ms between tries. Before each new
// try the text the call streamed so far is void (the context's TextSink restarts). It returns
// call's last error, or ctx's when ctx ends during a backoff; onRetry hears each retried error.
// The built-in loop's calls and the harnesses' forwarded calls retry through it alike.
func Retry(ctx context.Context, onRetry func(attempt int, err error), call func() (retry bool, err error)) error {
	backoff := 500 * time.Millisecond
	for attempt := 1; ; attempt++ {
		if attempt > 1 {
			if s := SinkOf(ctx); s != nil {
				s.Restart()
			}
		}
		retry, err := call()
		if err == nil || !retry || attempt >= RetryAttempts {
			return err
		}
		onRetry(attempt, err)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return ctx.Err()
		}
		backoff *= 2
	}
}
