package events

import (
	"context"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"
)

// BudgetType is the type of a budget alert.
const BudgetType = "budget.threshold"

// Thresholds are the shares of a budget, in percent, whose crossing is
// announced, once each per budget and period.
var Thresholds = [...]int{50, 80, 100}

// Line is one budget as an admission saw it: whose it is, its period and
// what of it is spent.
type Line struct {
	Tenant, App, Key string
	Period           string // daily or monthly
	PeriodStart      time.Time
	Limit, Spent     int64 // micro-USD
	// Refused says the budget just refused a request. Past the 80%
	// threshold that counts as 100%: a budget reserves each request's
	// worst case, so it stops serving before its spend reaches the limit.
	Refused bool
}

// level is the highest threshold l has reached, 0 for none.
func (l Line) level() int {
	if l.Limit <= 0 {
		return 0
	}
	pct := l.Spent * 100 / l.Limit
	if l.Refused && pct >= 80 {
		pct = 100
	}
	reached := 0
	for _, t := range Thresholds {
		if pct >= int64(t) {
			reached = t
		}
	}
	return reached
}

// Budget is a budget alert, as consumers read it.
type Budget struct {
	Type        string    `json:"type"`
	ID          string    `json:"id"`
	Time        time.Time `json:"time"`
	Tenant      string    `json:"tenant"`
	App         string    `json:"app,omitempty"`
	KeyName     string    `json:"key_name,omitempty"`
	Period      string    `json:"period"`
	PeriodStart time.Time `json:"period_start"`
	Threshold   int       `json:"threshold_percent"`
	LimitMicros int64     `json:"limit_micros"`
	SpentMicros int64     `json:"spent_micros"`
}

// DecodeBudget reads a budget alert from a stream entry's values.
func DecodeBudget(values map[string]any) (Budget, error) {
	var b Budget
	return b, decode(values, &b)
}

// Alerter announces budget thresholds crossed. Observe is called on the
// request path with figures the admission brought back, so it only
// compares and, rarely, queues; a goroutine publishes. The stream is the
// replicas' referee: an alert is added to it once per ID (the markers
// live as long as a period), and only the replica that added it calls the
// webhook. Without Redis (a single node) the alerter's memory is enough.
type Alerter struct {
	stream, webhook Target
	log             *slog.Logger
	now             func() time.Time

	mu     sync.Mutex
	seen   map[string]mark // tenant/app/key/period → highest threshold queued
	closed bool

	queue   chan Budget
	stop    context.CancelFunc
	stopped chan struct{}
}

type mark struct {
	start time.Time
	level int
}

// alertQueue bounds the alerts waiting to be published. Each budget has
// three a period: a full queue means the targets have been away for long.
const alertQueue = 4096

// NewAlerter publishes alerts to stream and webhook (either may be nil)
// and starts its goroutine; Close stops it.
func NewAlerter(stream *Stream, webhook Target, log *slog.Logger) *Alerter {
	ctx, stop := context.WithCancel(context.Background())
	a := &Alerter{webhook: webhook, log: log, now: time.Now, seen: map[string]mark{},
		queue: make(chan Budget, alertQueue), stop: stop, stopped: make(chan struct{})}
	if stream != nil {
		a.stream = stream.Remembering(32 * 24 * time.Hour) // a month and a margin
	}
	go a.run(ctx)
	return a
}

// Observe queues an alert for each threshold l has reached that was not
// announced yet in its period. A nil Alerter observes nothing.
func (a *Alerter) Observe(l Line) {
	if a == nil {
		return
	}
	level := l.level()
	if level == 0 {
		return
	}
	k := l.Tenant + "/" + l.App + "/" + l.Key + "/" + l.Period
	a.mu.Lock()
	m := a.seen[k]
	if m.start.Equal(l.PeriodStart) && m.level >= level {
		a.mu.Unlock()
		return
	}
	from := 0
	if m.start.Equal(l.PeriodStart) {
		from = m.level
	}
	a.seen[k] = mark{start: l.PeriodStart, level: level}
	defer a.mu.Unlock() // Close closes the queue under the lock
	if a.closed {
		return
	}
	for _, t := range Thresholds {
		if t <= from || t > level {
			continue
		}
		b := Budget{Type: BudgetType, Time: a.now().UTC(), Tenant: l.Tenant, App: l.App, KeyName: l.Key, Period: l.Period,
			PeriodStart: l.PeriodStart.UTC(), Threshold: t, LimitMicros: l.Limit, SpentMicros: l.Spent}
		b.ID = "budget:" + k + ":" + b.PeriodStart.Format("2006-01-02") + ":" + strconv.Itoa(t)
		select {
		case a.queue <- b:
		default:
			a.log.Error("budget alerts queue full: alert dropped", slog.String("id", b.ID))
		}
	}
}

// Close publishes what is queued, until ctx is done, and stops.
func (a *Alerter) Close(ctx context.Context) {
	go func() {
		<-ctx.Done()
		a.stop()
	}()
	a.mu.Lock()
	a.closed = true
	close(a.queue)
	a.mu.Unlock()
	<-a.stopped
	a.stop()
}

func (a *Alerter) run(ctx context.Context) {
	defer close(a.stopped)
	for b := range a.queue {
		a.publish(ctx, b)
	}
}

// publish sends b to the stream, then, if this replica was the one to add
// it, to the webhook, each retried with backoff until it goes through, is
// refused, or the alerter stops.
func (a *Alerter) publish(ctx context.Context, b Budget) {
	raw, _ := json.Marshal(b) // plain fields: cannot fail
	msg := []Message{{ID: b.ID, Type: BudgetType, JSON: raw}}
	if a.stream != nil {
		n, ok := a.retry(ctx, "stream", b.ID, func() (int, error) { return a.stream.Publish(ctx, msg) })
		if !ok || n == 0 {
			return // refused, stopped, or another replica (or an earlier run) announced it
		}
	}
	if a.webhook != nil {
		a.retry(ctx, "webhook", b.ID, func() (int, error) { return a.webhook.Publish(ctx, msg) })
	}
}

func (a *Alerter) retry(ctx context.Context, target, id string, call func() (int, error)) (int, bool) {
	delay := 100 * time.Millisecond
	for {
		n, err := call()
		if err == nil {
			return n, true
		}
		if !unavailable(err) {
			a.log.Error("budget alert refused: dropped", slog.String("target", target), slog.String("id", id), slog.Any("error", err))
			return 0, false
		}
		a.log.Warn("budget alert not published: retrying", slog.String("target", target), slog.String("id", id),
			slog.Duration("retry_in", delay), slog.Any("error", err))
		select {
		case <-ctx.Done():
			a.log.Error("budget alert not published before shutdown", slog.String("target", target), slog.String("id", id))
			return 0, false
		case <-time.After(delay + rand.N(delay/5)):
		}
		delay = min(2*delay, 30*time.Second)
	}
}
