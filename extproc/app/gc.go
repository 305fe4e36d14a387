package app

import (
	"os"
	"runtime/debug"
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
)

// memory is how ext_proc's collector is tuned.
type memory struct {
	gcPercent int
	limit     int64
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
