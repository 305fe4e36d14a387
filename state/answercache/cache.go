// Package answercache keeps answers for the response cache (filters/cache): a
// replica's own memory, bounded in bytes, in front of a layer shared by
// every replica in Redis. An entry is an answer as the client got it (an
// OpenAI chat completion) with what it took to make.
package answercache

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/redis/go-redis/v9"
)

// Entry is a cached answer.
type Entry struct {
	Body             []byte `json:"body"`
	Model            string `json:"model"`
	PromptTokens     int    `json:"prompt_tokens"`
	CompletionTokens int    `json:"completion_tokens"`
	// CostMicros is what the provider charged for the answer, in
	// micro-USD: what each hit saves. An entry written before the field
	// existed reads as 0, saving nothing.
	CostMicros int64     `json:"cost_micros"`
	Stored     time.Time `json:"stored"`
}

// size is what an entry costs in memory, roughly.
func (e *Entry) size(key string) int64 { return int64(len(e.Body) + len(e.Model) + len(key) + 64) }

// Memory is a replica's answers, bounded in bytes: the least recently used
// leave first.
type Memory struct {
	mu    sync.Mutex
	max   int64
	bytes int64
	items *lru.LRU[string, Entry]
}

// NewMemory keeps at most maxBytes of answers.
func NewMemory(maxBytes int64) *Memory {
	m := &Memory{max: maxBytes}
	m.items, _ = lru.NewLRU[string, Entry](1<<30, func(k string, e Entry) { m.bytes -= e.size(k) })
	return m
}

// Get returns the entry under key if it was stored within maxAge of now.
func (m *Memory) Get(key string, now time.Time, maxAge time.Duration) (Entry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.items.Get(key)
	if !ok || now.Sub(e.Stored) > maxAge {
		return Entry{}, false
	}
	return e, true
}

// Put stores e under key, evicting the least recently used entries past
// the bound. An entry larger than the whole bound is not kept.
func (m *Memory) Put(key string, e Entry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e.size(key) > m.max {
		return
	}
	m.items.Remove(key)
	m.items.Add(key, e)
	m.bytes += e.size(key)
	for m.bytes > m.max {
		m.items.RemoveOldest()
	}
}

// Bytes is what the entries take, roughly.
func (m *Memory) Bytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bytes
}

// Shared is the answers every replica sees, in Redis.
type Shared struct {
	c      redis.UniversalClient
	prefix string
}

// NewShared keeps answers under "<prefix>:cache:<key>".
func NewShared(c redis.UniversalClient, prefix string) *Shared {
	return &Shared{c: c, prefix: prefix + ":cache:"}
}

// ErrMiss is Get's answer for a key it does not hold.
var ErrMiss = errors.New("cache: miss")

// Get returns the entry under key, ErrMiss, or Redis' error.
func (s *Shared) Get(ctx context.Context, key string) (Entry, error) {
	b, err := s.c.Get(ctx, s.prefix+key).Bytes()
	if errors.Is(err, redis.Nil) {
		return Entry{}, ErrMiss
	}
	if err != nil {
		return Entry{}, err
	}
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		return Entry{}, ErrMiss // written by an incompatible version: as good as absent
	}
	return e, nil
}

// Put stores e under key for ttl.
func (s *Shared) Put(ctx context.Context, key string, e Entry, ttl time.Duration) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return s.c.Set(ctx, s.prefix+key, b, ttl).Err()
}
