package model

import (
	"context"
	"errors"
	"testing"
)

type restarts struct{ n int }

func (r *restarts) Text(string) {}
func (r *restarts) Restart()    { r.n++ }

func TestRetryStopsAtAFinalError(t *testing.T) {
	calls := 0
	bad := errors.New("bad request")
	err := Retry(context.Background(), func(int, error) { t.Fatal("a final error is not retried") }, func() (bool, error) {
		calls++
		return false, bad
	})
	if !errors.Is(err, bad) || calls != 1 {
		t.Fatalf("Retry = %v after %d calls, want %v after 1", err, calls, bad)
	}
}

func TestRetryTriesATransientErrorAgainAndVoidsItsText(t *testing.T) {
	sink := &restarts{}
	ctx := WithTextSink(context.Background(), sink)
	calls, heard := 0, 0
	err := Retry(ctx, func(int, error) { heard++ }, func() (bool, error) {
		calls++
		if calls < 2 {
			return true, errors.New("overloaded")
		}
		return false, nil
	})
	if err != nil || calls != 2 || heard != 1 || sink.n != 1 {
		t.Fatalf("Retry = %v, calls %d, retries heard %d, text restarts %d; want nil, 2, 1, 1", err, calls, heard, sink.n)
	}
}

func TestRetryEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	err := Retry(ctx, func(int, error) { cancel() }, func() (bool, error) { return true, errors.New("overloaded") })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Retry = %v, want context.Canceled", err)
	}
}
