package console

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/switchyard/switchyard/state/health"
	"github.com/switchyard/switchyard/state/ledger"
)

// A window is the span the overview charts, cut into buckets.
type window struct {
	Name    string
	Title   string
	Step    time.Duration
	Buckets int
	Label   string // the bucket labels' time layout
}

var windows = map[string]window{
	"hour": {Name: "hour", Title: "last hour", Step: 5 * time.Minute, Buckets: 12, Label: "15:04"},
	"day":  {Name: "day", Title: "last day", Step: time.Hour, Buckets: 24, Label: "15:04"},
}

// dimensions the overview groups by.
var dimensions = map[string]ledger.Dimension{"tenant": ledger.ByTenant, "model": ledger.ByModel}

// maxSeries bounds the groups a chart shows; the rest are summed as
// "other".
const maxSeries = 8

// overviewView is the overview page's.
type overviewView struct {
	Window    window
	By        string
	Windows   []string
	Bys       []string
	Total     ledger.Totals
	Rows      []ledger.Row // the window's totals per group, busiest first
	Charts    []chart
	Providers []health.ProviderStatus
}

// chart is one stacked bar chart, drawn by web/static/console.js from
// its JSON.
type chart struct {
	ID     string   `json:"id"`
	Title  string   `json:"title"`
	Unit   string   `json:"unit"`
	Labels []string `json:"labels"`
	Series []series `json:"series"`
	Total  float64  `json:"total"`
}

type series struct {
	Name   string    `json:"name"`
	Values []float64 `json:"values"`
}

// overview reads the ledger for the chosen window (?window=hour|day) and
// grouping (?by=tenant|model), and the health monitor for the strip.
func (f *Filter) overview(ctx context.Context, c *call) (any, error) {
	w, ok := windows[c.query.Get("window")]
	if !ok {
		w = windows["hour"]
	}
	by := c.query.Get("by")
	dim, ok := dimensions[by]
	if !ok {
		by, dim = "tenant", ledger.ByTenant
	}
	v := &overviewView{Window: w, By: by, Windows: []string{"hour", "day"}, Bys: []string{"tenant", "model"}}
	if f.health != nil {
		v.Providers = f.health.Snapshot()
	}
	// The buckets end with the one now falls in; the first report waits
	// for the ledger's writer, so every answer released so far counts.
	end := f.now().UTC().Truncate(w.Step).Add(w.Step)
	start := end.Add(-time.Duration(w.Buckets) * w.Step)
	rep, err := f.usage.Report(ctx, ledger.Filter{From: start, To: end}, dim)
	if err != nil {
		return nil, err
	}
	for _, r := range rep.Data {
		v.Rows = append(v.Rows, ledger.Row{Group: r.Group, Totals: r.Totals})
	}
	slices.SortStableFunc(v.Rows, func(a, b ledger.Row) int { return cmp.Compare(b.Requests, a.Requests) })
	v.Total = rep.Total.Totals
	names := groupNames(v.Rows, dim)
	buckets := make([][]ledger.Row, w.Buckets)
	labels := make([]string, w.Buckets)
	for i := range buckets {
		from := start.Add(time.Duration(i) * w.Step)
		labels[i] = from.Format(w.Label)
		if buckets[i], err = f.usage.Ledger.Query(ctx, ledger.Filter{From: from, To: from.Add(w.Step)}, dim); err != nil {
			return nil, err
		}
	}
	for _, m := range metrics {
		v.Charts = append(v.Charts, m.chart(w, labels, names, buckets, dim))
	}
	return v, nil
}

// groupNames are the series of the charts: the busiest groups, and
// "other" for the rest.
func groupNames(rows []ledger.Row, dim ledger.Dimension) []string {
	var names []string
	for i, r := range rows {
		if i == maxSeries {
			names = append(names, other)
			break
		}
		names = append(names, groupName(r.Group, dim))
	}
	return names
}

const other = "other"

// groupName is a row's group as the charts name it.
func groupName(g ledger.Group, dim ledger.Dimension) string {
	n := g.Tenant
	if dim == ledger.ByModel {
		n = g.Model
	}
	if n == "" {
		return "(none)"
	}
	return n
}

// metric is one chart of the overview: a figure of a row and its unit.
type metric struct {
	id, title, unit string
	of              func(t ledger.Totals) float64
}

var metrics = []metric{
	{"requests", "Requests", "requests", func(t ledger.Totals) float64 { return float64(t.Requests) }},
	{"errors", "Errors", "requests", func(t ledger.Totals) float64 { return float64(t.Errors) }},
	{"spend", "Spend", "USD", func(t ledger.Totals) float64 { return float64(t.CostMicros) / 1e6 }},
	{"tokens", "Tokens", "tokens", func(t ledger.Totals) float64 { return float64(t.InputTokens + t.OutputTokens) }},
}

func (m metric) chart(w window, labels, names []string, buckets [][]ledger.Row, dim ledger.Dimension) chart {
	ch := chart{ID: m.id, Title: m.title + ", " + w.Title + ", by " + string(dim), Unit: m.unit, Labels: labels}
	index := map[string]int{}
	for i, n := range names {
		index[n] = i
		ch.Series = append(ch.Series, series{Name: n, Values: make([]float64, len(buckets))})
	}
	for b, rows := range buckets {
		for _, r := range rows {
			i, ok := index[groupName(r.Group, dim)]
			if !ok {
				// Beyond the busiest groups, with the others; a group
				// whose first request landed after the window's totals
				// were read shows at the next refresh.
				if i, ok = index[other]; !ok {
					continue
				}
			}
			val := m.of(r.Totals)
			ch.Series[i].Values[b] += val
			ch.Total += val
		}
	}
	return ch
}
