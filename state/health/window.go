package health

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// Latencies are counted in logarithmic bins, so a window holds a fixed
// amount of memory whatever the traffic and still merges and slides
// exactly. Bin 0 holds everything up to binBase; bin i holds up to
// binBase·binGrowth^i; the last bin (from about 34 minutes) has no bound. A
// quantile is reported as its bin's upper bound, at most 5 % above the true
// value, and never above the largest latency seen.
const (
	binCount  = 300
	binBase   = time.Millisecond
	binGrowth = 1.05
)

var (
	logGrowth = math.Log(binGrowth)
	binUpper  = func() [binCount]time.Duration {
		var u [binCount]time.Duration
		for i := range u {
			u[i] = time.Duration(float64(binBase) * math.Pow(binGrowth, float64(i)))
		}
		return u
	}()
)

func binOf(d time.Duration) int {
	if d < binBase {
		return 0
	}
	i := int(math.Ceil(math.Log(float64(d)/float64(binBase)) / logGrowth))
	return min(i, binCount-1)
}

// hist counts latencies by bin.
type hist struct {
	n    uint32
	max  time.Duration
	bins [binCount]uint32
}

func (h *hist) add(d time.Duration) {
	h.n++
	h.bins[binOf(d)]++
	h.max = max(h.max, d)
}

// merge adds o to h; sign -1 takes it away (the max is not taken away: a
// window's max is recomputed from its live buckets).
func (h *hist) merge(o *hist, sign int) {
	if sign > 0 {
		h.n += o.n
		for i, c := range o.bins {
			h.bins[i] += c
		}
		h.max = max(h.max, o.max)
		return
	}
	h.n -= o.n
	for i, c := range o.bins {
		h.bins[i] -= c
	}
}

// quantile returns the nearest-rank q-quantile, capped at maxSeen.
func (h *hist) quantile(q float64, maxSeen time.Duration) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint32(math.Ceil(q * float64(h.n)))
	rank = max(rank, 1)
	var seen uint32
	for i, c := range h.bins {
		seen += c
		if seen >= rank && i < binCount-1 {
			return min(binUpper[i], maxSeen)
		}
	}
	return maxSeen // the last bin has no upper bound
}

// bucket is one slice of a window.
type bucket struct {
	epoch    int64 // which slice of time since the monitor's origin
	used     bool
	requests uint32
	errors   uint32
	lat      hist
	ttft     hist
}

func (b *bucket) record(failed bool, latency, ttft time.Duration) {
	b.requests++
	if failed {
		b.errors++
	}
	if latency > 0 {
		b.lat.add(latency)
	}
	if ttft > 0 {
		b.ttft.add(ttft)
	}
}

func (b *bucket) merge(o *bucket, sign int) {
	if sign > 0 {
		b.requests += o.requests
		b.errors += o.errors
	} else {
		b.requests -= o.requests
		b.errors -= o.errors
	}
	b.lat.merge(&o.lat, sign)
	b.ttft.merge(&o.ttft, sign)
}

// window is a sliding window of attempt outcomes, in buckets of span. The
// running sum saves merging every bucket on each read. version changes
// whenever what the window reports may change, so readers can cache what
// they derive from it.
type window struct {
	span    time.Duration
	ring    []bucket
	epoch   int64 // newest epoch seen
	sum     bucket
	version uint64

	quota      float64 // -1: unknown
	quotaEpoch int64
}

func newWindow(c *Config) *window {
	return &window{span: bucketSpan(c), ring: make([]bucket, c.Buckets), quota: -1}
}

func (w *window) epochOf(age time.Duration) int64 {
	return int64(max(age, 0) / w.span)
}

// advance moves the window to epoch e, dropping the buckets that left it.
func (w *window) advance(e int64) {
	if e <= w.epoch {
		return
	}
	w.epoch = e
	oldest := e - int64(len(w.ring)) + 1
	for i := range w.ring {
		if b := &w.ring[i]; b.used && b.epoch < oldest {
			w.sum.merge(b, -1)
			*b = bucket{}
			w.version++
		}
	}
	if w.quota >= 0 && w.quotaEpoch < oldest {
		w.quota = -1
		w.version++
	}
}

// add records one observation made at age (time since the origin).
func (w *window) add(age time.Duration, failed bool, latency, ttft time.Duration, quota float64) {
	e := w.epochOf(age)
	w.advance(e)
	e = max(e, w.epoch) // a clock that stepped back writes into the newest bucket
	b := &w.ring[e%int64(len(w.ring))]
	if !b.used || b.epoch != e {
		*b = bucket{epoch: e, used: true}
	}
	b.record(failed, latency, ttft)
	w.sum.record(failed, latency, ttft)
	if quota >= 0 {
		w.quota, w.quotaEpoch = quota, e
	}
	w.version++
}

// rebucket returns w re-sliced for c, keeping every observation that is
// still inside the new window: each old bucket lands in the new bucket that
// holds its start.
func (w *window) rebucket(c *Config, age time.Duration) *window {
	n := newWindow(c)
	n.version = w.version + 1
	n.epoch = n.epochOf(age)
	oldest := n.epoch - int64(len(n.ring)) + 1
	place := func(e int64) int64 { return int64(time.Duration(e) * w.span / n.span) }
	for i := range w.ring {
		b := &w.ring[i]
		e := place(b.epoch)
		if !b.used || e < oldest {
			continue
		}
		t := &n.ring[e%int64(len(n.ring))]
		if !t.used {
			*t = bucket{epoch: e, used: true}
		}
		t.merge(b, 1)
		n.sum.merge(b, 1)
	}
	if e := place(w.quotaEpoch); w.quota >= 0 && e >= oldest {
		n.quota, n.quotaEpoch = w.quota, e
	}
	return n
}

// Stats are the numbers a window holds.
type Stats struct {
	// Requests and Errors count the attempts in the window.
	Requests int `json:"requests"`
	Errors   int `json:"errors"`
	// ErrorRate is Errors/Requests, 0 without requests.
	ErrorRate float64 `json:"error_rate"`
	// LatencySamples counts the attempts with a known latency; P95 and P99
	// are their percentiles.
	LatencySamples int      `json:"latency_samples"`
	P95            Duration `json:"p95"`
	P99            Duration `json:"p99"`
	// TTFTSamples counts the streamed attempts with a known time to first
	// token; TTFTP95 is their 95th percentile.
	TTFTSamples int      `json:"ttft_samples"`
	TTFTP95     Duration `json:"ttft_p95"`
	// Quota is the last remaining-quota fraction read in the window, -1
	// when none was.
	Quota float64 `json:"quota"`
}

func (w *window) stats() Stats {
	var latMax, ttftMax time.Duration
	for i := range w.ring {
		if b := &w.ring[i]; b.used {
			latMax = max(latMax, b.lat.max)
			ttftMax = max(ttftMax, b.ttft.max)
		}
	}
	s := Stats{
		Requests:       int(w.sum.requests),
		Errors:         int(w.sum.errors),
		LatencySamples: int(w.sum.lat.n),
		P95:            Duration(w.sum.lat.quantile(0.95, latMax)),
		P99:            Duration(w.sum.lat.quantile(0.99, latMax)),
		TTFTSamples:    int(w.sum.ttft.n),
		TTFTP95:        Duration(w.sum.ttft.quantile(0.95, ttftMax)),
		Quota:          w.quota,
	}
	if s.Requests > 0 {
		s.ErrorRate = float64(s.Errors) / float64(s.Requests)
	}
	return s
}

// judge derives a state from s under c. The reason lists every signal past
// the bound of the state it gives; signals with fewer than MinSamples
// samples behind them are ignored.
func judge(s Stats, c *Config) (State, string) {
	st, why, _ := judgeErrors(s, c)
	return st, why
}

// judgeErrors is judge, and whether the error rate is the only signal past
// its unavailable bound (the one Config.UnavailableFor holds back).
func judgeErrors(s Stats, c *Config) (State, string, bool) {
	errorsKnown := s.Requests >= c.MinSamples
	latencyKnown := s.LatencySamples >= c.MinSamples
	quotaKnown := s.Quota >= 0
	var down, weak []string
	errorDown := false
	if errorsKnown {
		rate := "error rate " + percent(s.ErrorRate)
		if s.ErrorRate > c.Unavailable.ErrorRate {
			down, errorDown = append(down, rate+" > "+percent(c.Unavailable.ErrorRate)), true
		} else if s.ErrorRate >= c.Healthy.ErrorRate {
			weak = append(weak, rate+" ≥ "+percent(c.Healthy.ErrorRate))
		}
	}
	if latencyKnown {
		p99 := "p99 " + s.P99.String()
		if time.Duration(s.P99) > c.Unavailable.P99 {
			down = append(down, p99+" > "+Duration(c.Unavailable.P99).String())
		} else if time.Duration(s.P99) >= c.Healthy.P99 {
			weak = append(weak, p99+" ≥ "+Duration(c.Healthy.P99).String())
		}
	}
	if quotaKnown {
		quota := "quota " + percent(s.Quota)
		if s.Quota < c.Unavailable.Quota {
			down = append(down, quota+" < "+percent(c.Unavailable.Quota))
		} else if s.Quota <= c.Healthy.Quota {
			weak = append(weak, quota+" ≤ "+percent(c.Healthy.Quota))
		}
	}
	switch {
	case len(down) > 0:
		return Unavailable, strings.Join(down, ", "), errorDown && len(down) == 1
	case len(weak) > 0:
		return Degraded, strings.Join(weak, ", "), false
	}
	return Healthy, "", false
}

// percent formats a fraction as a percentage with at most one decimal.
func percent(f float64) string {
	return strings.TrimSuffix(strconv.FormatFloat(f*100, 'f', 1, 64), ".0") + "%"
}

// Duration is a time.Duration that reads like "3.4s" in JSON and in
// reasons, rounded to the millisecond above one.
type Duration time.Duration

// String implements fmt.Stringer.
func (d Duration) String() string {
	t := time.Duration(d)
	if t >= time.Millisecond {
		t = t.Round(time.Millisecond)
	}
	return t.String()
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }
