package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// TallyBoard keeps decayed sums that every replica adds to and reads and
// that outlive the replicas: the evidence auto routing learns each
// domain's prior from (state/priors). A series holds entries by name,
// each a few sums that halve every half-life after they were last added
// to. Unlike a SketchBoard, whose summaries belong to one replica each
// and expire with it, a tally is the deployment's: a replica that
// restarts (under a new name) finds what it and the others learnt.
type TallyBoard interface {
	// AddTallies decays each named entry of series to now and adds the
	// given sums to it, creating it if needed; the series is kept ttl
	// after the last call.
	AddTallies(ctx context.Context, series string, adds []Tally, halfLife, ttl time.Duration) error
	// Tallies returns every entry of series, decayed to now.
	Tallies(ctx context.Context, series string, halfLife time.Duration) ([]Tally, error)
	// DropTallies removes entries of series; unknown names are ignored.
	DropTallies(ctx context.Context, series string, names []string) error
}

// Tally is one entry of a series.
type Tally struct {
	Name string
	Sums []float64
	// At is when the entry was last added to (set by the store; ignored
	// by AddTallies).
	At time.Time
}

// Bounds on what a tally call carries.
const (
	maxTallySums = 16
	maxTallyName = 256
)

func checkTallies(series string, adds []Tally, halfLife, ttl time.Duration) error {
	if err := checkName("tally series", series); err != nil {
		return err
	}
	if halfLife < time.Millisecond || ttl < time.Millisecond {
		return fmt.Errorf("%w: tally half-life and ttl must be at least 1ms", ErrInvalid)
	}
	for _, a := range adds {
		if err := checkTallyName(a.Name); err != nil {
			return err
		}
		if len(a.Sums) == 0 || len(a.Sums) > maxTallySums {
			return fmt.Errorf("%w: tally %q has %d sums, want 1..%d", ErrInvalid, a.Name, len(a.Sums), maxTallySums)
		}
		for _, s := range a.Sums {
			if math.IsNaN(s) || math.IsInf(s, 0) {
				return fmt.Errorf("%w: tally %q has a sum that is not a finite number", ErrInvalid, a.Name)
			}
		}
	}
	return nil
}

func checkTallyName(name string) error {
	if name == "" || len(name) > maxTallyName {
		return fmt.Errorf("%w: tally name must be 1..%d bytes", ErrInvalid, maxTallyName)
	}
	return nil
}

func checkDrop(series string, names []string) error {
	if err := checkName("tally series", series); err != nil {
		return err
	}
	for _, n := range names {
		if err := checkTallyName(n); err != nil {
			return err
		}
	}
	return nil
}

// decayFactor is what a sum keeps after dt at halfLife.
func decayFactor(dt, halfLife time.Duration) float64 {
	if dt <= 0 {
		return 1
	}
	return math.Exp2(-dt.Seconds() / halfLife.Seconds())
}

// addSums adds b to a, element by element, growing a to b's length.
func addSums(a, b []float64) []float64 {
	for len(a) < len(b) {
		a = append(a, 0)
	}
	for i, v := range b {
		a[i] += v
	}
	return a
}

type memTally struct {
	sums []float64
	at   time.Time
}

type memTallySeries struct {
	entries map[string]*memTally
	expires time.Time
}

// AddTallies implements TallyBoard.
func (m *Memory) AddTallies(_ context.Context, series string, adds []Tally, halfLife, ttl time.Duration) error {
	if err := checkTallies(series, adds, halfLife, ttl); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	s := m.liveTallies(series, now)
	if s == nil {
		if m.tallies == nil {
			m.tallies = map[string]*memTallySeries{}
		}
		s = &memTallySeries{entries: map[string]*memTally{}}
		m.tallies[series] = s
	}
	for _, a := range adds {
		e := s.entries[a.Name]
		if e == nil {
			e = &memTally{at: now}
			s.entries[a.Name] = e
		}
		f := decayFactor(now.Sub(e.at), halfLife)
		for i := range e.sums {
			e.sums[i] *= f
		}
		e.sums, e.at = addSums(e.sums, a.Sums), now
	}
	s.expires = now.Add(ttl)
	return nil
}

// liveTallies is series unless it expired (then dropped); the caller
// holds m.mu.
func (m *Memory) liveTallies(series string, now time.Time) *memTallySeries {
	s := m.tallies[series]
	if s != nil && !now.Before(s.expires) {
		delete(m.tallies, series)
		return nil
	}
	return s
}

// Tallies implements TallyBoard.
func (m *Memory) Tallies(_ context.Context, series string, halfLife time.Duration) ([]Tally, error) {
	if err := checkTallies(series, nil, halfLife, time.Millisecond); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	s := m.liveTallies(series, now)
	if s == nil {
		return nil, nil
	}
	out := make([]Tally, 0, len(s.entries))
	for name, e := range s.entries {
		f := decayFactor(now.Sub(e.at), halfLife)
		sums := make([]float64, len(e.sums))
		for i, v := range e.sums {
			sums[i] = v * f
		}
		out = append(out, Tally{Name: name, Sums: sums, At: e.at})
	}
	return out, nil
}

// DropTallies implements TallyBoard.
func (m *Memory) DropTallies(_ context.Context, series string, names []string) error {
	if err := checkDrop(series, names); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.tallies[series]; s != nil {
		for _, n := range names {
			delete(s.entries, n)
		}
	}
	return nil
}

func (r *Redis) tallyKey(series string) string { return r.prefix + ":{ty:" + series + "}" }

// tallyBatch bounds the entries one script call adds: a call holds Redis
// for its length, and a route's tenant may add thousands at once.
const tallyBatch = 500

// AddTallies implements TallyBoard: one hash per series, a field per
// entry holding "last add in µs|sum|sum|…", decayed and added to inside
// one script so that replicas adding at once lose nothing.
func (r *Redis) AddTallies(ctx context.Context, series string, adds []Tally, halfLife, ttl time.Duration) error {
	if err := checkTallies(series, adds, halfLife, ttl); err != nil {
		return err
	}
	for len(adds) > 0 {
		n := min(len(adds), tallyBatch)
		args := []any{r.now(), halfLife.Microseconds(), ttl.Milliseconds(), n}
		for _, a := range adds[:n] {
			args = append(args, a.Name, encodeSums(a.Sums))
		}
		if err := tallyAddScript.Run(ctx, r.c, []string{r.tallyKey(series)}, args...).Err(); err != nil {
			return r.fail("add_tallies", err)
		}
		adds = adds[n:]
	}
	return nil
}

// encodeSums writes sums as the scripts read them: decimal, '|'-separated,
// exact (17 significant digits).
func encodeSums(sums []float64) string {
	var b strings.Builder
	for i, s := range sums {
		if i > 0 {
			b.WriteByte('|')
		}
		b.WriteString(strconv.FormatFloat(s, 'g', 17, 64))
	}
	return b.String()
}

// Tallies implements TallyBoard.
func (r *Redis) Tallies(ctx context.Context, series string, halfLife time.Duration) ([]Tally, error) {
	if err := checkTallies(series, nil, halfLife, time.Millisecond); err != nil {
		return nil, err
	}
	res, err := tallyGetScript.Run(ctx, r.c, []string{r.tallyKey(series)}, r.now()).StringSlice()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, r.fail("tallies", err)
	}
	if len(res) == 0 {
		return nil, errors.New("store tallies: the script returned no time")
	}
	nowUS, err := strconv.ParseInt(res[0], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("store tallies: time %q: %w", res[0], err)
	}
	now := time.UnixMicro(nowUS)
	out := make([]Tally, 0, len(res)/2)
	for i := 1; i+1 < len(res); i += 2 {
		t, ok := decodeTally(res[i], res[i+1], now, halfLife)
		if !ok {
			continue // not one of ours: a foreign write is not evidence
		}
		out = append(out, t)
	}
	return out, nil
}

// decodeTally reads a field written by tally_add.lua and decays it to now.
func decodeTally(name, value string, now time.Time, halfLife time.Duration) (Tally, bool) {
	parts := strings.Split(value, "|")
	if len(parts) < 2 || len(parts) > maxTallySums+1 {
		return Tally{}, false
	}
	at, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil {
		return Tally{}, false
	}
	t := Tally{Name: name, At: time.UnixMicro(at), Sums: make([]float64, len(parts)-1)}
	f := decayFactor(now.Sub(t.At), halfLife)
	for i, p := range parts[1:] {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return Tally{}, false
		}
		t.Sums[i] = v * f
	}
	return t, true
}

// DropTallies implements TallyBoard.
func (r *Redis) DropTallies(ctx context.Context, series string, names []string) error {
	if err := checkDrop(series, names); err != nil {
		return err
	}
	if len(names) == 0 {
		return nil
	}
	if err := r.c.HDel(ctx, r.tallyKey(series), names...).Err(); err != nil {
		return r.fail("drop_tallies", err)
	}
	return nil
}
