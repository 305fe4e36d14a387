package extprocapp

import (
	"context"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// current reads the collector's settings without changing them.
func current() (gcPercent int, limit int64) {
	gcPercent = debug.SetGCPercent(100)
	debug.SetGCPercent(gcPercent)
	return gcPercent, debug.SetMemoryLimit(-1)
}

func TestMemoryTuning(t *testing.T) {
	gc, limit := current()
	t.Cleanup(func() {
		debug.SetGCPercent(gc)
		debug.SetMemoryLimit(limit)
	})
	c, err := parseFlags(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		env       map[string]string
		m         memory
		wantGC    int
		wantLimit int64
	}{
		{name: "defaults", m: c.memory, wantGC: defaultGCPercent, wantLimit: defaultMemoryLimit},
		{name: "flags", m: memory{gcPercent: 250, limit: 1 << 30}, wantGC: 250, wantLimit: 1 << 30},
		// The environment is the runtime's to read at start; tune leaves
		// what it set alone.
		{name: "GOGC and GOMEMLIMIT win", env: map[string]string{"GOGC": "150", "GOMEMLIMIT": "1GiB"}, m: memory{gcPercent: 250, limit: 1 << 20}, wantGC: 150, wantLimit: 77 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetGCPercent(150)
			debug.SetMemoryLimit(77 << 20)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			tc.m.tune()
			if gc, limit := current(); gc != tc.wantGC || limit != tc.wantLimit {
				t.Errorf("GOGC %d, memory limit %d; want %d and %d", gc, limit, tc.wantGC, tc.wantLimit)
			}
		})
	}
}

// TestQuietSpells: the heap's free memory goes back to the system once
// per quiet spell, after the idle time, never while a request is in
// flight or requests keep coming.
func TestQuietSpells(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	type sample struct {
		ms                int
		inFlight, started int64
		want              bool
	}
	for _, tc := range []struct {
		name    string
		samples []sample
	}{
		{"quiet from the start: once", []sample{{500, 0, 0, false}, {1000, 0, 0, false}, {2000, 0, 0, true}, {2500, 0, 0, false}, {9000, 0, 0, false}}},
		{"a request in flight, however long: never", []sample{{500, 1, 1, false}, {3000, 1, 1, false}, {9000, 1, 1, false}}},
		{"requests keep coming: not while they come", []sample{{500, 0, 1, false}, {1500, 0, 2, false}, {2500, 0, 3, false}, {3500, 0, 4, false}}},
		{"a spell after each burst", []sample{
			{2000, 0, 0, true},
			{2500, 0, 5, false}, {4000, 0, 5, false}, {4500, 0, 5, true},
			{5000, 2, 7, false}, {6000, 0, 7, false}, {8000, 0, 7, true}, {20000, 0, 7, false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := quiet{idle: 2 * time.Second, since: t0, released: -1}
			for _, s := range tc.samples {
				if got := q.due(at(s.ms), s.inFlight, s.started); got != s.want {
					t.Errorf("at %d ms (%d in flight, %d begun): release %v, want %v", s.ms, s.inFlight, s.started, got, s.want)
				}
			}
		})
	}
}

// TestReleaseWhenIdle runs the loop itself: quiet from the start, it
// releases, and it stops with its context; off, it returns at once.
func TestReleaseWhenIdle(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	freed := make(chan struct{}, 8)
	done := make(chan struct{})
	go func() {
		memory{idleRelease: 20 * time.Millisecond}.releaseWhenIdle(ctx, func() (int64, int64) { return 0, 0 }, func() { freed <- struct{}{} })
		close(done)
	}()
	select {
	case <-freed:
	case <-time.After(5 * time.Second):
		t.Fatal("no release in a quiet spell")
	}
	cancel()
	<-done

	off := make(chan struct{})
	go func() {
		memory{}.releaseWhenIdle(context.Background(), func() (int64, int64) { return 0, 0 }, func() { t.Error("released with the release off") })
		close(off)
	}()
	select {
	case <-off:
	case <-time.After(5 * time.Second):
		t.Fatal("releaseWhenIdle with no idle time kept running")
	}
}

func TestGCPercentFor(t *testing.T) {
	m := memory{gcPercent: 400, headroom: 32 << 20}
	for _, tc := range []struct {
		name string
		live uint64
		open int64
		want int
	}{
		{"nothing live yet: the most", 0, 0, 400},
		{"a request load's live heap: the most", 8 << 20, 64, 400},
		{"between", 16 << 20, 64, 200},
		{"a large live heap: the room", 64 << 20, 64, 50},
		{"never under half the live heap", 1 << 30, 0, 50},
		{"the room whole up to 128 in flight", 16 << 20, 128, 200},
		{"shared past 128 in flight", 4 << 20, 256, 400},
		{"shared among 512", 4 << 20, 512, 200},
		{"1,000 open streams: half the live heap", 16 << 20, 1000, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := m.gcPercentFor(tc.live, tc.open); got != tc.want {
				t.Errorf("gcPercentFor(%d, %d) = %d, want %d", tc.live, tc.open, got, tc.want)
			}
		})
	}
}

// TestFollowLiveHeap: GOGC follows the live heap after a collection,
// unless the operator fixed it or there is nothing to follow.
func TestFollowLiveHeap(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  string
		m    memory
		want bool
	}{
		// A headroom of a byte puts any live heap at the floor.
		{name: "follows", m: memory{gcPercent: 400, headroom: 1}, want: true},
		{name: "$GOGC set: fixed", env: "150", m: memory{gcPercent: 400, headroom: 1}},
		{name: "no headroom: fixed", m: memory{gcPercent: 400}},
		{name: "no room above 100 %: fixed", m: memory{gcPercent: 100, headroom: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("GOGC", tc.env)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			set := make(chan int, 1)
			following := tc.m.followLiveHeap(ctx, func(p int) int {
				select {
				case set <- p:
				default:
				}
				return 0
			}, func() int64 { return 0 })
			if following != tc.want {
				t.Fatalf("following = %v, want %v", following, tc.want)
			}
			if !tc.want {
				return
			}
			runtime.GC()
			if got := <-set; got != minGCPercent {
				t.Errorf("GOGC set to %d after a collection, want %d", got, minGCPercent)
			}
		})
	}
}
