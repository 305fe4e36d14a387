package router

import (
	"sync"
	"time"

	"github.com/switchyard/switchyard/filters"
)

// Sticky remembers which model served an end user, per route, for a
// cooldown, so a conversation does not change style mid-way. It is
// process-local and bounded: stickiness is a preference, not state that
// must survive a replica (a user moved to another replica re-sticks).
type Sticky struct {
	mu    sync.Mutex
	now   func() time.Time
	max   int
	items map[string]stickyEntry
}

type stickyEntry struct {
	model string
	until time.Time
}

// NewSticky returns a store holding at most max users.
func NewSticky(max int, now func() time.Time) *Sticky {
	return &Sticky{now: now, max: max, items: map[string]stickyEntry{}}
}

// Get returns the model user was served by on route, if within cooldown.
func (s *Sticky) Get(route, user string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.items[route+"\x00"+user]
	if !ok || s.now().After(e.until) {
		return "", false
	}
	return e.model, true
}

// Set records that model served user on route, for cooldown.
func (s *Sticky) Set(route, user, model string, cooldown time.Duration) {
	if cooldown <= 0 || user == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if len(s.items) >= s.max {
		for k, e := range s.items {
			if now.After(e.until) {
				delete(s.items, k)
			}
		}
		if len(s.items) >= s.max {
			for k := range s.items { // still full: forget an arbitrary user
				delete(s.items, k)
				break
			}
		}
	}
	s.items[route+"\x00"+user] = stickyEntry{model: model, until: now.Add(cooldown)}
}

var _ filters.StickyStore = (*Sticky)(nil)
