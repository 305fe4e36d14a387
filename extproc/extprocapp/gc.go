package extprocapp

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// ext_proc's live heap is small (tens of MB under load) and almost all it
// allocates dies with its request, so at Go's default GOGC of 100 the
// collector ran most of the time for little: 6–7 % of ext_proc's CPU at
// concurrency 64 (`make bench` -profile), against 1.4–2.4 % at 400. The
// larger heap target that buys is held to a soft memory limit, so a flood
// cannot grow it past what the node budgets; near the limit the collector
// simply runs more often.
//
// But 400 % of what streams hold open is waste: 1,000 slow streams kept
// about 25 MB live, and at 400 % the heap grew to 130 MB, 118 KB of
// resident memory a stream against 50 KB at 100 % (`make bench`'s
// many-streams row, issue 35). What a request allocates and drops needs
// room in proportion to the request rate, not to the live heap, so the
// room is bounded in bytes: after each collection GOGC is set to give
// the live heap defaultHeadroom more, at least minGCPercent and at most
// defaultGCPercent. Under a request load (about 10–15 MB live) that is
// still 230–400 %; under many open streams it falls towards the floor.
//
// Even the room itself is too much for many open streams: at 1,000 it
// was 32 KB of resident memory a stream (make bench's many-streams row,
// 60–68 KB a stream against the anchor's 32–43). So the room is shared:
// past roomStreams requests in flight each has headroom/roomStreams of it,
// and with 1,000 open the heap grows by half its live part
// (minGCPercent). The loads that need the room, many short requests,
// hold few open at once (concurrency 64, or a few dozen at 60 % of
// capacity open loop); a room shrunk by allocation rate instead cost
// those loads 9–13 % more of ext_proc's CPU (docs/BENCHMARKS.md).
//
// The floor was Go's default 100 %. With 1,000 slow streams open that
// left ext_proc 37–38 KB of resident memory a stream, the heap's goal
// 33 MB over 14 MB live; at 50 % it is 28–30 KB, the goal 20–22 MB, for
// twice the collections (72 against 37 in the 24 s of
// `go run ./bench/gateway -profile DIR -profile-streams 1000`) and 2 %
// more of a core spent collecting (gctrace's 4 % against 2 %). At 25 %
// it was 29 KB for 7 %: no better.
const (
	minGCPercent       = 50
	defaultGCPercent   = 400
	defaultHeadroom    = 32 << 20
	roomStreams        = 128
	defaultMemoryLimit = 256 << 20
	defaultIdleRelease = 2 * time.Second
)

// memory is how ext_proc's collector is tuned.
type memory struct {
	// gcPercent is the most GOGC is set to; headroom, when set, the heap
	// growth in bytes past the live heap that GOGC follows
	// ([memory.followLiveHeap]).
	gcPercent int
	headroom  int64
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

// releaseHeap collects twice and gives the free heap back. What the
// load left in sync.Pools (gRPC's buffers, the ledger's frames, a
// request's header room) survives one collection as the pools' victims
// and goes at the second.
func releaseHeap() {
	runtime.GC()
	debug.FreeOSMemory()
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

// gcPercentFor is the GOGC that gives a live heap of live bytes its room
// with open requests in flight (m.roomFor), at least minGCPercent and at
// most m.gcPercent.
func (m memory) gcPercentFor(live uint64, open int64) int {
	if live == 0 {
		return m.gcPercent
	}
	return max(minGCPercent, min(m.gcPercent, int(uint64(m.roomFor(open))*100/live)))
}

// roomFor is the heap's growth past its live part that the collector
// allows with open requests in flight: m.headroom, shared among them past
// roomStreams.
func (m memory) roomFor(open int64) int64 {
	if open <= roomStreams {
		return m.headroom
	}
	return m.headroom * roomStreams / open
}

// followLiveHeap sets GOGC after each collection to gcPercentFor the live
// heap it found and the requests then in flight (inFlight), until ctx
// ends; set is [debug.SetGCPercent] and is told each change. It reports
// whether it follows: not where the operator set $GOGC, nor without a
// headroom or room above 100 %.
func (m memory) followLiveHeap(ctx context.Context, set func(int) int, inFlight func() int64) bool {
	if _, fixed := os.LookupEnv("GOGC"); fixed || m.headroom <= 0 || m.gcPercent <= 100 {
		return false
	}
	f := &liveHeap{m: m, ctx: ctx, set: set, inFlight: inFlight, current: m.gcPercent, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	f.arm()
	return true
}

type liveHeap struct {
	m        memory
	ctx      context.Context
	set      func(int) int
	inFlight func() int64
	current  int
	sample   []metrics.Sample
}

// gcCycle is garbage from birth: its cleanup runs after the next
// collection. It holds a pointer, so the tiny allocator, which lets small
// pointer-free objects share a block and outlive a collection, leaves it
// alone.
type gcCycle struct{ _ *byte }

func (f *liveHeap) arm() {
	runtime.AddCleanup(new(gcCycle), (*liveHeap).collected, f)
}

// collected runs on the runtime's cleanup goroutine after a collection.
func (f *liveHeap) collected() {
	if f.ctx.Err() != nil {
		return
	}
	metrics.Read(f.sample)
	if p := f.m.gcPercentFor(f.sample[0].Value.Uint64(), f.inFlight()); p != f.current {
		f.current = p
		f.set(p)
	}
	f.arm()
}
