package quota

import (
	"context"
	"sync"
	"time"
)

// lazyTimeout is its parent with a deadline, whose timer is made only when
// something waits on the context. A store call on the request path is
// nearly always served from this replica's leases without looking at its
// context; context.WithTimeout would still arm and stop a runtime timer
// for it, a few microseconds a call (issue 35, docs/BENCHMARKS.md). A call
// that does reach the network waits on Done, or asks for the Value a
// derived context looks for, and from then on it is that timed context.
type lazyTimeout struct {
	parent   context.Context
	deadline time.Time

	mu     sync.Mutex
	timed  context.Context
	cancel context.CancelFunc
	// stopped is set by stop: a context made after it is made cancelled,
	// as a timer context is after its cancel.
	stopped bool
}

// withLazyTimeout returns ctx bounded by d, and the function that lets its
// resources go, as context.WithTimeout does.
func withLazyTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	c := &lazyTimeout{parent: ctx, deadline: time.Now().Add(d)}
	return c, c.stop
}

func (c *lazyTimeout) get() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timed == nil {
		c.timed, c.cancel = context.WithDeadline(c.parent, c.deadline)
		if c.stopped {
			c.cancel()
		}
	}
	return c.timed
}

func (c *lazyTimeout) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	if c.cancel != nil {
		c.cancel()
	}
}

// Deadline is known without a timer: the earlier of the parent's and its
// own.
func (c *lazyTimeout) Deadline() (time.Time, bool) {
	if d, ok := c.parent.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

func (c *lazyTimeout) Done() <-chan struct{} { return c.get().Done() }
func (c *lazyTimeout) Err() error            { return c.get().Err() }

// Value goes through the timed context too: context.Cause and the
// contexts derived from this one find the timer's state through it.
func (c *lazyTimeout) Value(key any) any { return c.get().Value(key) }
