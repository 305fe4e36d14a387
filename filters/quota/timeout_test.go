package quota

import (
	"context"
	"errors"
	"testing"
	"time"
)

type ctxKey struct{}

// TestLazyTimeout: the lazy context behaves as context.WithTimeout's does,
// whichever of its methods is called first.
func TestLazyTimeout(t *testing.T) {
	for _, tc := range []struct {
		name string
		// parent and d make the context; run does something to it and to
		// the parent's cancel, then says what Err should be.
		d    time.Duration
		run  func(ctx context.Context, cancelParent, stop context.CancelFunc) error
		want error
	}{
		{name: "runs out", d: 20 * time.Millisecond, want: context.DeadlineExceeded, run: func(ctx context.Context, _, _ context.CancelFunc) error {
			<-ctx.Done()
			return ctx.Err()
		}},
		{name: "runs out before anyone waits", d: time.Millisecond, want: context.DeadlineExceeded, run: func(ctx context.Context, _, _ context.CancelFunc) error {
			time.Sleep(10 * time.Millisecond)
			return ctx.Err()
		}},
		{name: "parent cancelled", d: time.Hour, want: context.Canceled, run: func(ctx context.Context, cancelParent, _ context.CancelFunc) error {
			cancelParent()
			<-ctx.Done()
			return ctx.Err()
		}},
		{name: "stopped before anyone waits", d: time.Hour, want: context.Canceled, run: func(ctx context.Context, _, stop context.CancelFunc) error {
			stop()
			<-ctx.Done()
			return ctx.Err()
		}},
		{name: "stopped while waited on", d: time.Hour, want: context.Canceled, run: func(ctx context.Context, _, stop context.CancelFunc) error {
			done := ctx.Done()
			stop()
			<-done
			return ctx.Err()
		}},
		{name: "not yet due", d: time.Hour, want: nil, run: func(ctx context.Context, _, _ context.CancelFunc) error {
			select {
			case <-ctx.Done():
				return errors.New("done early")
			default:
			}
			return ctx.Err()
		}},
		{name: "a derived context sees the deadline", d: 20 * time.Millisecond, want: context.DeadlineExceeded, run: func(ctx context.Context, _, _ context.CancelFunc) error {
			child, cancel := context.WithCancel(ctx)
			defer cancel()
			<-child.Done()
			if c := context.Cause(child); !errors.Is(c, context.DeadlineExceeded) {
				return c
			}
			return child.Err()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent, cancelParent := context.WithCancel(context.WithValue(t.Context(), ctxKey{}, "v"))
			defer cancelParent()
			ctx, stop := withLazyTimeout(parent, tc.d)
			defer stop()
			if got := tc.run(ctx, cancelParent, stop); !errors.Is(got, tc.want) || (tc.want == nil && got != nil) {
				t.Errorf("Err() = %v, want %v", got, tc.want)
			}
			if v := ctx.Value(ctxKey{}); v != "v" {
				t.Errorf("Value of the parent's key = %v, want v", v)
			}
		})
	}
}

// TestLazyTimeoutDeadline: the deadline is the earlier of its own and its
// parent's, known without a timer.
func TestLazyTimeoutDeadline(t *testing.T) {
	now := time.Now()
	ctx, stop := withLazyTimeout(t.Context(), time.Hour)
	defer stop()
	if d, ok := ctx.Deadline(); !ok || d.Before(now.Add(time.Hour)) || d.After(time.Now().Add(time.Hour)) {
		t.Errorf("Deadline() = %v, %v; want an hour from now", d, ok)
	}
	parent, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	want, _ := parent.Deadline()
	ctx, stop = withLazyTimeout(parent, time.Hour)
	defer stop()
	if d, ok := ctx.Deadline(); !ok || !d.Equal(want) {
		t.Errorf("Deadline() under a parent due first = %v, %v; want the parent's %v", d, ok, want)
	}
	if lt := ctx.(*lazyTimeout); lt.timed != nil {
		t.Error("Deadline made the timer")
	}
}
