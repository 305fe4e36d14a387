package report

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/state/ledger"
)

// flushTimeout bounds the wait for the writer before a report: past it the
// ledger is taken to be down, and the report refused rather than short.
const flushTimeout = 5 * time.Second

// Report is the answer of a usage API call.
type Report struct {
	Object string `json:"object"`
	// From and To are the time range asked for, From inclusive and To
	// exclusive; absent means unbounded.
	From   *time.Time `json:"from,omitempty"`
	To     *time.Time `json:"to,omitempty"`
	Tenant string     `json:"tenant,omitempty"`
	// Session and Tags are the session and the tags the rows were
	// narrowed to, when the call gave them.
	Session string             `json:"session,omitempty"`
	Tags    map[string]string  `json:"tags,omitempty"`
	GroupBy []ledger.Dimension `json:"group_by"`
	Data    []Row              `json:"data"`
	// Total is the sum of the rows.
	Total Row `json:"total"`
}

// Row is one group's totals. Cost is exact in micro-USD; CostUSD is the same
// figure as a decimal string, and SavedUSD what the response cache saved.
type Row struct {
	ledger.Group
	ledger.Totals
	CostUSD  string `json:"cost_usd"`
	SavedUSD string `json:"saved_usd"`
}

// Source is where reports come from: the ledger, and the process's writer
// that feeds it.
type Source struct {
	Writer *ledger.Writer
	Ledger ledger.Ledger
}

// Report sums the ledger rows f selects, grouped by the dimensions. A ledger
// that cannot be read, or a writer that cannot catch up, refuses the call
// with 503: a report missing rows would be wrong, not late.
func (s Source) Report(ctx context.Context, f ledger.Filter, by ...ledger.Dimension) (*Report, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	rows, err := s.Ledger.Query(ctx, f, by...)
	if err != nil {
		return nil, unavailable()
	}
	rep := &Report{Object: "usage", Tenant: f.Tenant, Session: f.Session, Tags: f.Tags, GroupBy: append([]ledger.Dimension{}, by...), Data: make([]Row, 0, len(rows))}
	if !f.From.IsZero() {
		rep.From = &f.From
	}
	if !f.To.IsZero() {
		rep.To = &f.To
	}
	var total ledger.Totals
	for _, r := range rows {
		rep.Data = append(rep.Data, Row{Group: r.Group, Totals: r.Totals, CostUSD: USD(r.CostMicros), SavedUSD: USD(r.SavedMicros)})
		total.Requests += r.Requests
		total.Errors += r.Errors
		total.InputTokens += r.InputTokens
		total.OutputTokens += r.OutputTokens
		total.CachedTokens += r.CachedTokens
		total.CostMicros += r.CostMicros
		total.SavedMicros += r.SavedMicros
	}
	rep.Total = Row{Totals: total, CostUSD: USD(total.CostMicros), SavedUSD: USD(total.SavedMicros)}
	return rep, nil
}

// ready waits for the writer to hand the ledger the record of every answer
// released so far, so that a read misses none.
func (s Source) ready(ctx context.Context) error {
	if s.Ledger == nil {
		return unavailable()
	}
	if s.Writer != nil {
		fctx, cancel := context.WithTimeout(ctx, flushTimeout)
		err := s.Writer.FlushAnswered(fctx)
		cancel()
		if err != nil {
			return unavailable()
		}
	}
	return nil
}

// QualityReport is the answer of GET /v1/usage/quality: per route,
// tenant and served model, the ratings apps gave and what auto routing
// cost against sending every auto request to the strongest model.
type QualityReport struct {
	Object string       `json:"object"`
	From   *time.Time   `json:"from,omitempty"`
	To     *time.Time   `json:"to,omitempty"`
	Tenant string       `json:"tenant,omitempty"`
	Data   []QualityRow `json:"data"`
}

// QualityRow is one route, tenant and model's figures, with the dollars
// as exact decimal strings.
type QualityRow struct {
	ledger.Quality
	AutoCostUSD   string `json:"auto_cost_usd"`
	StrongCostUSD string `json:"strong_cost_usd"`
	SavedUSD      string `json:"saved_usd"`
}

// Quality reports the delivered quality and the savings of the records f
// selects.
func (s Source) Quality(ctx context.Context, f ledger.Filter) (*QualityReport, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	rows, err := s.Ledger.Quality(ctx, f)
	if err != nil {
		return nil, unavailable()
	}
	rep := &QualityReport{Object: "usage.quality", Tenant: f.Tenant, Data: make([]QualityRow, 0, len(rows))}
	if !f.From.IsZero() {
		rep.From = &f.From
	}
	if !f.To.IsZero() {
		rep.To = &f.To
	}
	for _, q := range rows {
		rep.Data = append(rep.Data, QualityRow{Quality: q, AutoCostUSD: USD(q.AutoCostMicros), StrongCostUSD: USD(q.StrongCostMicros), SavedUSD: USD(q.SavedMicros())})
	}
	return rep, nil
}

// Lookup returns the record of request id if tenant made it; ok is false
// when the ledger holds no such request of that tenant.
func (s Source) Lookup(ctx context.Context, id, tenant string) (rec ledger.Record, ok bool, err error) {
	if err := s.ready(ctx); err != nil {
		return rec, false, err
	}
	for r, err := range s.Ledger.Records(ctx, ledger.Filter{RequestID: id, Tenant: tenant}) {
		if err != nil {
			return rec, false, unavailable()
		}
		return r, true, nil
	}
	return rec, false, nil
}

// Rate records a rating; the caller has checked whose request it is. A
// request rated before is a 409: it counts once.
func (s Source) Rate(ctx context.Context, r ledger.Rating) error {
	if s.Ledger == nil {
		return unavailable()
	}
	switch err := s.Ledger.Rate(ctx, r); {
	case err == nil:
		return nil
	case errors.Is(err, ledger.ErrAlreadyRated):
		return openaiapi.Errorf(http.StatusConflict, openaiapi.TypeInvalidRequest, "already_rated",
			"the request %q is already rated; a request is rated once", openaiapi.Clip(r.RequestID)).WithParam("request_id")
	}
	return unavailable()
}

func unavailable() error {
	return openaiapi.Errorf(http.StatusServiceUnavailable, openaiapi.TypeServiceUnavailable, "usage_unavailable",
		"usage figures are unavailable right now: the usage ledger cannot be read; retry later")
}

// USD writes micro-USD as an exact decimal string of dollars.
func USD(micros int64) string {
	sign := ""
	if micros < 0 {
		sign, micros = "-", -micros
	}
	frac := strconv.FormatInt(micros%1_000_000, 10)
	for len(frac) < 6 {
		frac = "0" + frac
	}
	return sign + strconv.FormatInt(micros/1_000_000, 10) + "." + frac
}

// ParseQuery reads a usage call's query string: from and to (RFC 3339),
// tenant, app, model, session, and tag (key:value, given once for each
// tag the requests must all carry). Anything else, or a value given
// twice, is refused with 400, so a misspelt filter never silently widens
// a report.
func ParseQuery(raw string) (ledger.Filter, error) {
	f, _, err := parseQuery(raw, false)
	return f, err
}

// ParseTagQuery is ParseQuery for a view by tag, whose key, the tag whose
// values the report is grouped by, is required.
func ParseTagQuery(raw string) (f ledger.Filter, key string, err error) {
	return parseQuery(raw, true)
}

func parseQuery(raw string, byTag bool) (ledger.Filter, string, error) {
	var (
		f   ledger.Filter
		key string
	)
	q, err := url.ParseQuery(raw)
	if err != nil {
		return f, "", badQuery("", "the query string does not parse: %v", err)
	}
	for k, vs := range q {
		if k == "tag" {
			if f.Tags, err = tagFilters(vs); err != nil {
				return f, "", err
			}
			continue
		}
		if len(vs) != 1 {
			return f, "", badQuery(k, "give %s once", k)
		}
		v := vs[0]
		switch k {
		case "from", "to":
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return f, "", badQuery(k, "%s must be an RFC 3339 time such as 2026-01-02T15:04:05Z; got %q", k, v)
			}
			if k == "from" {
				f.From = t
			} else {
				f.To = t
			}
		case "tenant":
			f.Tenant = v
		case "app":
			f.App = v
		case "model":
			f.Model = v
		case "session":
			f.Session = v
		case "key":
			if !byTag {
				return f, "", badQuery(k, "key names the tag of a view by tag (by-tag?key=team); this view has none")
			}
			if why := policy.TagProblem(v, "x"); why != "" {
				return f, "", badQuery(k, "%s", why)
			}
			key = v
		default:
			return f, "", badQuery(k, "unknown parameter %q; use from, to, tenant, app, model, session or tag", k)
		}
	}
	if byTag && key == "" {
		return f, "", badQuery("key", "a view by tag needs the tag's key: by-tag?key=team")
	}
	if !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To) {
		return f, "", badQuery("to", "to must be after from")
	}
	return f, key, nil
}

// tagFilters reads the tag parameters, each key:value.
func tagFilters(vs []string) (map[string]string, error) {
	tags := make(map[string]string, len(vs))
	for _, v := range vs {
		k, val, ok := strings.Cut(v, ":")
		if !ok {
			return nil, badQuery("tag", "tag must be key:value, such as tag=team:search; got %q", openaiapi.Clip(v))
		}
		if why := policy.TagProblem(k, val); why != "" {
			return nil, badQuery("tag", "%s", why)
		}
		if _, dup := tags[k]; dup {
			return nil, badQuery("tag", "tag %s is given twice", k)
		}
		tags[k] = val
	}
	return tags, nil
}

func badQuery(param, format string, args ...any) error {
	e := openaiapi.Errorf(http.StatusBadRequest, openaiapi.TypeInvalidRequest, "invalid_query", format, args...)
	if param != "" {
		e = e.WithParam(param)
	}
	return e
}

// Records yields the records f selects, oldest first, once the writer has
// handed the ledger the record of every answer released so far.
func (s Source) Records(ctx context.Context, f ledger.Filter) (iter.Seq2[ledger.Record, error], error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	return s.Ledger.Records(ctx, f), nil
}
