package auth

import (
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Bounds of the negative cache: a client retrying with a wrong or revoked
// key (a misconfigured app does it in a loop) costs one store lookup per
// unknownTTL, not one per request. Keys are random secrets issued by the
// admin API, so no key can be presented, cached as unknown, and then be
// issued: only revocation changes a key's fate, and it is permanent.
const (
	unknownKeysMax = 10_000
	unknownTTL     = 30 * time.Second
)

// unknownKeys remembers the hashes of keys the store did not know, or
// knew as revoked, for unknownTTL; the least recently seen go first.
type unknownKeys struct {
	lru *lru.Cache[[32]byte, unknown]
	now func() time.Time
}

type unknown struct {
	until   time.Time
	revoked bool
}

func newUnknownKeys(size int, now func() time.Time) *unknownKeys {
	c, err := lru.New[[32]byte, unknown](size)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return &unknownKeys{lru: c, now: now}
}

// refusal returns the refusal remembered for sum, or nil.
func (u *unknownKeys) refusal(sum [32]byte) error {
	if u == nil {
		return nil
	}
	v, ok := u.lru.Get(sum)
	switch {
	case !ok:
		return nil
	case !u.now().Before(v.until):
		u.lru.Remove(sum)
		return nil
	case v.revoked:
		return revokedKey()
	}
	return invalidKey()
}

func (u *unknownKeys) remember(sum [32]byte, revoked bool) {
	if u != nil {
		u.lru.Add(sum, unknown{until: u.now().Add(unknownTTL), revoked: revoked})
	}
}
