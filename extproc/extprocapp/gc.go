package extprocapp

import (
	"context"
	"os"
	"runtime/debug"
	"time"
)

// ext_proc's live heap is small (tens of MB under load) and almost all it
// allocates dies with its request, so at Go's default GOGC of 100 the
// collector ran most of the time for little: 6–7 % of ext_proc's CPU at
// concurrency 64 (`make bench` -profile), against 1.4–2.4 % at 400. The
// larger heap target that buys is held to a soft memory limit, so a flood
// cannot grow it past what the node budgets; near the limit the collector
// simply runs more often.
const (
	defaultGCPercent   = 400
	defaultMemoryLimit = 256 << 20
	defaultIdleRelease = 2 * time.Second
)

// memory is how ext_proc's collector is tuned.
type memory struct {
	gcPercent int
	limit     int64
	// idleRelease is how long ext_proc must have served nothing before it
	// gives its free heap back ([memory.releaseWhenIdle]); 0: never.
	idleRelease time.Duration
}

// tune applies m, except where the operator set Go's own GOGC or
// GOMEMLIMIT, which the runtime has already read and which win.
func (m memory) tune() {
	if _, set := os.LookupEnv("GOGC"); !set && m.gcPercent > 0 {
		debug.SetGCPercent(m.gcPercent)
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set && m.limit > 0 {
		debug.SetMemoryLimit(m.limit)
	}
}

// releaseWhenIdle gives the heap's free pages back to the system once no
// request has been in flight or begun for m.idleRelease, once per quiet
// spell. The collector sizes the heap for load (GOGC 400, up to the soft
// limit), and a node that waits for traffic should hold only what it
// uses; Go's scavenger would return the pages too, but over minutes. The
// cost is one collection when traffic stops, a millisecond or so of a
// small heap's marking. activity reports the requests in flight and how
// many have begun; free is [debug.FreeOSMemory].
func (m memory) releaseWhenIdle(ctx context.Context, activity func() (inFlight, started int64), free func()) {
	if m.idleRelease <= 0 {
		return
	}
	t := time.NewTicker(m.idleRelease / 4)
	defer t.Stop()
	q := quiet{idle: m.idleRelease, since: time.Now(), released: -1}
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			inFlight, started := activity()
			if q.due(now, inFlight, started) {
				free()
			}
		}
	}
}

// quiet follows the spells without requests, as sampled.
type quiet struct {
	idle     time.Duration
	since    time.Time // when the last activity was seen
	seen     int64     // requests begun, at the last sample
	released int64     // requests begun, at the last release
}

// due takes a sample and reports whether the spell is now long enough,
// and not yet released.
func (q *quiet) due(now time.Time, inFlight, started int64) bool {
	if inFlight > 0 || started != q.seen {
		q.since, q.seen = now, started
		return false
	}
	if started == q.released || now.Sub(q.since) < q.idle {
		return false
	}
	q.released = started
	return true
}
