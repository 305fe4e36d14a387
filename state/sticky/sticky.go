// Package sticky remembers which model served an end user, so that a
// conversation keeps its model for a route's cooldown.
package sticky

import (
	"crypto/sha256"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
)

// MaxUser is the longest end-user identifier that sticks. The
// identifier is client input of any size; a longer one gets no
// stickiness rather than a costly key.
const MaxUser = 256

// maxStickiness bounds how long any entry is kept, whatever a route's
// cooldown says, so the store forgets idle users by itself.
const maxStickiness = 24 * time.Hour

// Store remembers which model served an end user of a tenant, per route,
// for a cooldown, so a conversation does not change style mid-way. It is
// process-local and bounded (a fixed number of users, evicted least
// recently used, and expired): stickiness is a preference, not state that
// must survive a replica (a user moved to another replica re-sticks).
//
// Keys are a hash of route, tenant and user, so one tenant cannot name
// another's users and a long identifier costs no more than a short one.
type Store struct {
	now   func() time.Time
	items *expirable.LRU[stickyKey, stickyEntry]
}

type stickyKey [sha256.Size]byte

type stickyEntry struct {
	model string
	until time.Time
}

// New returns a store holding at most max users.
func New(max int, now func() time.Time) *Store {
	return &Store{now: now, items: expirable.NewLRU[stickyKey, stickyEntry](max, nil, maxStickiness)}
}

func key(route, tenant, user string) (stickyKey, bool) {
	if user == "" || len(user) > MaxUser {
		return stickyKey{}, false
	}
	h := sha256.New()
	for _, s := range [...]string{route, tenant, user} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	var k stickyKey
	h.Sum(k[:0])
	return k, true
}

// Get returns the model user of tenant was served by on route, if within
// cooldown.
func (s *Store) Get(route, tenant, user string) (string, bool) {
	k, ok := key(route, tenant, user)
	if !ok {
		return "", false
	}
	e, ok := s.items.Get(k)
	if !ok || s.now().After(e.until) {
		return "", false
	}
	return e.model, true
}

// Set records that model served user of tenant on route, for cooldown.
func (s *Store) Set(route, tenant, user, model string, cooldown time.Duration) {
	k, ok := key(route, tenant, user)
	if cooldown <= 0 || !ok {
		return
	}
	s.items.Add(k, stickyEntry{model: model, until: s.now().Add(min(cooldown, maxStickiness))})
}

// Len is the number of users remembered.
func (s *Store) Len() int { return s.items.Len() }
