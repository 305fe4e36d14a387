package filters_test

import (
	"io"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard/switchyard/filters"
)

// TestCollectorsOncePerRegistry builds a filter package's collectors the
// way every policy reload does, and checks each registry gets one set,
// registered once, whatever the number of builds.
func TestCollectorsOncePerRegistry(t *testing.T) {
	var c filters.Collectors[prometheus.Counter]
	built := 0
	build := func() (prometheus.Counter, []prometheus.Collector) {
		built++
		n := prometheus.NewCounter(prometheus.CounterOpts{Name: "switchyard_test_total", Help: "Test."})
		return n, []prometheus.Collector{n}
	}
	a, b := prometheus.NewRegistry(), prometheus.NewRegistry()
	tests := []struct {
		name      string
		reg       prometheus.Registerer
		wantBuilt int
	}{
		{name: "first build on a", reg: a, wantBuilt: 1},
		{name: "reload on a", reg: a, wantBuilt: 1},
		{name: "first build on b", reg: b, wantBuilt: 2},
		{name: "no registry", reg: nil, wantBuilt: 3},
		{name: "no registry again", reg: nil, wantBuilt: 3},
		{name: "reload on b", reg: b, wantBuilt: 3},
	}
	for _, tt := range tests {
		// Not subtests: each step builds on the ones before.
		c.For(tt.reg, build).Inc()
		if built != tt.wantBuilt {
			t.Fatalf("%s: got %d builds, want %d", tt.name, built, tt.wantBuilt)
		}
	}
	for _, r := range []struct {
		name string
		reg  *prometheus.Registry
	}{{"a", a}, {"b", b}} {
		mfs, err := r.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		// Two builds on each registry, one counter: it counted both.
		if len(mfs) != 1 || len(mfs[0].GetMetric()) != 1 || mfs[0].GetMetric()[0].GetCounter().GetValue() != 2 {
			t.Errorf("registry %s: got %v, want switchyard_test_total 2 alone", r.name, mfs)
		}
	}
}

func TestDepsLog(t *testing.T) {
	set := slog.New(slog.NewTextHandler(io.Discard, nil))
	tests := []struct {
		name string
		deps filters.Deps
		want *slog.Logger // nil: one that discards everything
	}{
		{name: "logger set", deps: filters.Deps{Logger: set}, want: set},
		{name: "no logger", deps: filters.Deps{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.deps.Log()
			switch {
			case tt.want != nil && got != tt.want:
				t.Errorf("got %p, want the Deps' logger %p", got, tt.want)
			case tt.want == nil && (got == nil || got.Enabled(t.Context(), slog.LevelError)):
				t.Errorf("got %v, want a logger that discards even errors", got)
			}
		})
	}
}
