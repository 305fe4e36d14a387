package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestSpecificationMetricNames reads the specification's metric names,
// which deploy/prometheus/recording.yml records from the gateway's own
// metrics, through the real Prometheus scraping the acceptance run: the
// one attempt a provider failed (openai's 503, given up for a fallback)
// is provider_errors_total's only error, and request_duration_seconds
// has exactly the specification's buckets, holding every request of the
// ledger where its latency falls.
func TestSpecificationMetricNames(t *testing.T) {
	r := acceptance(t)
	ctx := context.Background()
	rows := ledgerRecords(t, r.s)
	query := func(expr string) map[string]float64 {
		t.Helper()
		got, err := r.prom.Query(ctx, expr)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		out := map[string]float64{}
		for _, s := range got {
			out[fmt.Sprintf("%s/%s/%s", s.Labels["provider"], s.Labels["endpoint"], s.Labels["le"])] += s.Value
		}
		return out
	}
	// The rules run on the scrapes after the run's last request.
	if err := eventually(30*time.Second, func() error {
		if n := query(`sum(request_duration_seconds_count)`)["//"]; n != float64(len(rows)) {
			return errNotYet
		}
		return nil
	}); err != nil {
		t.Fatalf("request_duration_seconds_count never reached the ledger's %d rows: %v", len(rows), query(`request_duration_seconds_count`))
	}

	if got, want := query(`provider_errors_total`), map[string]float64{"openai/chat/": 1}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("provider_errors_total: %v, want %v", got, want)
	}

	buckets, err := r.prom.Query(ctx, `count by (le) (request_duration_seconds_bucket)`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range buckets {
		got = append(got, b.Labels["le"])
	}
	slices.Sort(got)
	if want := []string{"+Inf", "0.1", "0.5", "1", "2", "5"}; !slices.Equal(got, want) {
		t.Errorf("request_duration_seconds buckets %v, want the specification's %v", got, want)
	}
	for _, le := range []float64{0.1, 0.5, 1, 2, 5} {
		want := 0
		for _, row := range rows {
			if row.Latency.Seconds() <= le {
				want++
			}
		}
		expr := fmt.Sprintf(`sum(request_duration_seconds_bucket{le="%g"})`, le)
		if n := query(expr)["//"]; n != float64(want) {
			t.Errorf("%s = %v; the ledger holds %d requests that took at most %gs", expr, n, want, le)
		}
	}
	if n := query(`sum(request_duration_seconds_bucket{le="+Inf"})`)["//"]; n != float64(len(rows)) {
		t.Errorf("the +Inf bucket holds %v requests, the ledger %d", n, len(rows))
	}
}
