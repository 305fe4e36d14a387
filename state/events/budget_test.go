package events_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard/switchyard/state/events"
	"github.com/switchyard/switchyard/state/store/redistest"
)

// recorder is a Target that keeps what it was sent.
type recorder struct {
	mu   sync.Mutex
	msgs []events.Budget
}

func (r *recorder) Publish(_ context.Context, msgs []events.Message) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range msgs {
		var b events.Budget
		if err := json.Unmarshal(m.JSON, &b); err != nil {
			return 0, err
		}
		r.msgs = append(r.msgs, b)
	}
	return len(msgs), nil
}

func (r *recorder) thresholds() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int
	for _, b := range r.msgs {
		out = append(out, b.Threshold)
	}
	return out
}

func TestAlerterOncePerThresholdPerPeriod(t *testing.T) {
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	line := func(start time.Time, spent int64, refused bool) events.Line {
		return events.Line{Tenant: "acme", Period: "daily", PeriodStart: start, Limit: 1000, Spent: spent, Refused: refused}
	}
	for _, tc := range []struct {
		name  string
		lines []events.Line
		want  []int
	}{
		{"below half", []events.Line{line(day, 0, false), line(day, 499, false)}, nil},
		{"each threshold once", []events.Line{line(day, 500, false), line(day, 600, false), line(day, 800, false), line(day, 900, false), line(day, 1000, false), line(day, 1200, false)}, []int{50, 80, 100}},
		{"a jump crosses every threshold below", []events.Line{line(day, 850, false)}, []int{50, 80}},
		{"a refusal past 80% is 100%", []events.Line{line(day, 850, false), line(day, 900, true), line(day, 950, true)}, []int{50, 80, 100}},
		{"a refusal below 80% is not", []events.Line{line(day, 100, true), line(day, 600, true)}, []int{50}},
		{"a new period starts over", []events.Line{line(day, 600, false), line(day.AddDate(0, 0, 1), 100, false), line(day.AddDate(0, 0, 1), 700, false)}, []int{50, 50}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hook := &recorder{}
			a := events.NewAlerter(nil, hook, slog.Default())
			for _, l := range tc.lines {
				a.Observe(l)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			a.Close(ctx)
			if got := hook.thresholds(); !slices.Equal(got, tc.want) {
				t.Errorf("alerts at %v%%, want %v", got, tc.want)
			}
		})
	}
}

// TestAlertersShareOneAnnouncement: two replicas see the same budget cross
// 50% and 80%; the stream gets each alert once and only one replica's
// webhook is called for each.
func TestAlertersShareOneAnnouncement(t *testing.T) {
	srv, err := redistest.New()
	if err == nil {
		err = srv.Start()
	}
	if err != nil {
		t.Fatal("needs a real redis-server:", err)
	}
	defer srv.Close()
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rc.Close()
	stream := events.NewStream(rc, "t", "usage", 1000)
	hooks := []*recorder{{}, {}}
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, h := range hooks {
		a := events.NewAlerter(stream, h, slog.Default())
		a.Observe(events.Line{Tenant: "acme", App: "web", Period: "monthly", PeriodStart: day, Limit: 1000, Spent: 810})
		a.Close(ctx)
	}
	msgs, err := rc.XRange(ctx, events.Key("t", "usage"), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, m := range msgs {
		b, err := events.DecodeBudget(m.Values)
		if err != nil {
			t.Fatal(err)
		}
		if m.Values["type"] != events.BudgetType || b.Tenant != "acme" || b.App != "web" || b.Period != "monthly" || b.SpentMicros != 810 {
			t.Errorf("entry %v", m.Values)
		}
		got = append(got, b.Threshold)
	}
	if !slices.Equal(got, []int{50, 80}) {
		t.Errorf("stream alerts at %v%%, want [50 80]", got)
	}
	if a, b := hooks[0].thresholds(), hooks[1].thresholds(); !slices.Equal(a, []int{50, 80}) || len(b) != 0 {
		t.Errorf("webhook calls: replica 1 %v, replica 2 %v; want [50 80] and none", a, b)
	}
}
