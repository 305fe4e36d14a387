package events

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard/switchyard/state/ledger"
)

//go:embed publish.lua
var publishSource string

var publishScript = redis.NewScript(publishSource)

// seenFor is how long a published usage event's ID is remembered against
// a retried batch.
const seenFor = 24 * time.Hour

// Stream publishes events to one Redis Stream. Each entry has the fields
// type, id and event (the JSON).
type Stream struct {
	c      redis.Scripter
	key    string
	maxLen int64
	seen   time.Duration
}

// NewStream publishes to the stream "<prefix>:{events}:<name>", trimmed to
// about maxLen entries.
func NewStream(c redis.Scripter, prefix, name string, maxLen int64) *Stream {
	return &Stream{c: c, key: Key(prefix, name), maxLen: maxLen, seen: seenFor}
}

// Remembering is the same stream with event IDs remembered for d: a
// budget alert's for its whole period, so that the replicas that see the
// crossing add it once.
func (s *Stream) Remembering(d time.Duration) *Stream {
	c := *s
	c.seen = d
	return &c
}

// Key is the Redis key of the stream name under prefix. The hash tag keeps
// the stream and its markers in one cluster slot.
func Key(prefix, name string) string { return prefix + ":{events}:" + name }

// Publish implements [Target]: one script run adds the messages whose ID
// it has not added before. Every Redis error is [ledger.ErrUnavailable]:
// the markers make a retry safe.
func (s *Stream) Publish(ctx context.Context, msgs []Message) (int, error) {
	args := make([]any, 0, 2+3*len(msgs))
	args = append(args, s.maxLen, int64(s.seen/time.Second))
	for _, m := range msgs {
		args = append(args, m.ID, m.Type, m.JSON)
	}
	n, err := publishScript.Run(ctx, s.c, []string{s.key}, args...).Int64()
	if err != nil {
		return 0, fmt.Errorf("%w: events stream: %v", ledger.ErrUnavailable, err)
	}
	return int(n), nil
}
