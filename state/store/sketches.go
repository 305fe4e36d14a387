package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// SketchBoard shares summaries between replicas: each replica writes its
// own summary of a series (an encoded quantile sketch, opaque here) and
// reads everyone's, so each can merge them into the deployment's view.
type SketchBoard interface {
	// PutSketch replaces replica's summary of series; it is dropped ttl
	// after this write unless written again.
	PutSketch(ctx context.Context, series, replica string, data []byte, ttl time.Duration) error
	// Sketches returns every replica's live summary of series, by replica.
	Sketches(ctx context.Context, series string) (map[string][]byte, error)
}

// maxSketchBytes bounds one summary: a sketch is a few kilobytes.
const maxSketchBytes = 1 << 20

func checkSketch(series, replica string, data []byte, ttl time.Duration) error {
	if err := checkName("sketch series", series); err != nil {
		return err
	}
	switch {
	case replica == "" || len(replica) > 256 || strings.Contains(replica, "|"):
		return fmt.Errorf("%w: replica name must be 1..256 bytes without '|'", ErrInvalid)
	case len(data) > maxSketchBytes:
		return fmt.Errorf("%w: sketch of %d bytes is over %d", ErrInvalid, len(data), maxSketchBytes)
	case ttl < time.Millisecond:
		return fmt.Errorf("%w: sketch ttl must be at least 1ms", ErrInvalid)
	}
	return nil
}

type memSketch struct {
	data    []byte
	expires time.Time
}

// PutSketch implements SketchBoard.
func (m *Memory) PutSketch(_ context.Context, series, replica string, data []byte, ttl time.Duration) error {
	if err := checkSketch(series, replica, data, ttl); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sketches == nil {
		m.sketches = map[string]map[string]memSketch{}
	}
	if m.sketches[series] == nil {
		m.sketches[series] = map[string]memSketch{}
	}
	m.sketches[series][replica] = memSketch{data: append([]byte(nil), data...), expires: m.clock.Now().Add(ttl)}
	return nil
}

// Sketches implements SketchBoard.
func (m *Memory) Sketches(_ context.Context, series string) (map[string][]byte, error) {
	if err := checkName("sketch series", series); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	out := map[string][]byte{}
	for replica, s := range m.sketches[series] {
		if !now.Before(s.expires) {
			delete(m.sketches[series], replica)
			continue
		}
		out[replica] = append([]byte(nil), s.data...)
	}
	return out, nil
}

func (r *Redis) sketchKey(series string) string { return r.prefix + ":{sk:" + series + "}" }

// PutSketch implements SketchBoard: one hash per series, a field per
// replica holding "expiry in µs|summary"; the hash itself expires when
// the last replica stops writing.
func (r *Redis) PutSketch(ctx context.Context, series, replica string, data []byte, ttl time.Duration) error {
	if err := checkSketch(series, replica, data, ttl); err != nil {
		return err
	}
	if err := sketchPutScript.Run(ctx, r.c, []string{r.sketchKey(series)}, r.now(), replica, ttl.Microseconds(), data).Err(); err != nil {
		return r.fail("put_sketch", err)
	}
	return nil
}

// Sketches implements SketchBoard; summaries past their expiry are
// skipped (and removed by the next write).
func (r *Redis) Sketches(ctx context.Context, series string) (map[string][]byte, error) {
	if err := checkName("sketch series", series); err != nil {
		return nil, err
	}
	res, err := sketchGetScript.Run(ctx, r.c, []string{r.sketchKey(series)}, r.now()).StringSlice()
	if errors.Is(err, redis.Nil) {
		return map[string][]byte{}, nil
	}
	if err != nil {
		return nil, r.fail("sketches", err)
	}
	out := make(map[string][]byte, len(res)/2)
	for i := 0; i+1 < len(res); i += 2 {
		out[res[i]] = []byte(res[i+1])
	}
	return out, nil
}
