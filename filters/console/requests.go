package console

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/state/ledger"
)

// maxRows is how many of the newest matching requests the page lists.
const maxRows = 100

// requestsView is the Requests page's.
type requestsView struct {
	Query   requestQuery
	Tenants []string
	Models  []string
	// Rows are the newest matching records, newest first; Matched
	// counts every match.
	Rows    []ledger.Record
	Matched int
	Max     int
}

// requestQuery is the page's filter form, as the browser sent it.
type requestQuery struct {
	Tenant, App, Model, Status, From, To string
}

// formTime is how a datetime-local input writes a time; the console
// reads and shows every time in UTC.
const formTime = "2006-01-02T15:04"

// parseTime reads a filter time, from a datetime-local input or RFC 3339.
func parseTime(field, s string) (time.Time, error) {
	if t, err := time.Parse(formTime, s); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return t, openaiapi.Errorf(http.StatusBadRequest, openaiapi.TypeInvalidRequest, "invalid_query",
			"%s must be a time such as 2026-01-02T15:04 (UTC); got %q", field, s)
	}
	return t, nil
}

// statusMatch is the status filter: all, ok (below 400), error (400 and
// above), 4xx, 5xx, or one status code.
func statusMatch(s string) (func(int) bool, error) {
	switch s {
	case "", "all":
		return func(int) bool { return true }, nil
	case "ok":
		return func(c int) bool { return c < 400 }, nil
	case "error":
		return func(c int) bool { return c >= 400 }, nil
	case "4xx":
		return func(c int) bool { return c >= 400 && c < 500 }, nil
	case "5xx":
		return func(c int) bool { return c >= 500 }, nil
	}
	code, err := strconv.Atoi(s)
	if err != nil || code < 100 || code > 599 {
		return nil, openaiapi.Errorf(http.StatusBadRequest, openaiapi.TypeInvalidRequest, "invalid_query",
			"status must be all, ok, error, 4xx, 5xx or a status code; got %q", s)
	}
	return func(c int) bool { return c == code }, nil
}

// requests lists the newest ledger rows the filter form selects, the
// last hour by default. The ledger yields them oldest first, so the page
// keeps the last maxRows it sees.
func (f *Filter) requests(ctx context.Context, c *call) (any, error) {
	q := c.query
	v := &requestsView{Max: maxRows, Query: requestQuery{
		Tenant: q.Get("tenant"), App: q.Get("app"), Model: q.Get("model"), Status: q.Get("status"), From: q.Get("from"), To: q.Get("to"),
	}}
	for _, t := range c.x.Policy.Tenants {
		v.Tenants = append(v.Tenants, t.Name)
	}
	for _, m := range c.x.Policy.Models {
		v.Models = append(v.Models, m.Name)
	}
	filter := ledger.Filter{Tenant: v.Query.Tenant, App: v.Query.App, Model: v.Query.Model}
	var err error
	if v.Query.From == "" {
		v.Query.From = f.now().UTC().Add(-time.Hour).Format(formTime)
	}
	if filter.From, err = parseTime("from", v.Query.From); err != nil {
		return nil, err
	}
	if v.Query.To != "" {
		if filter.To, err = parseTime("to", v.Query.To); err != nil {
			return nil, err
		}
	}
	match, err := statusMatch(v.Query.Status)
	if err != nil {
		return nil, err
	}
	records, err := f.usage.Records(ctx, filter)
	if err != nil {
		return nil, err
	}
	ring := make([]ledger.Record, maxRows)
	for r, err := range records {
		if err != nil {
			return nil, err
		}
		if match(r.Status) {
			ring[v.Matched%maxRows] = r
			v.Matched++
		}
	}
	for i := v.Matched - 1; i >= max(0, v.Matched-maxRows); i-- {
		v.Rows = append(v.Rows, ring[i%maxRows])
	}
	return v, nil
}

// requestView is a request's page.
type requestView struct {
	R        ledger.Record
	Attempts []attempt
	// Blame says whose doing the request's end was.
	Blame string
	// TraceURL is where the request's trace is seen, "" without a
	// viewer (gateway.tracing.viewer) or a trace.
	TraceURL string
}

// attempt is one try of a request on one provider, as the ledger tells
// it: the failed ones from their fallback reasons, the last from the
// record itself.
type attempt struct {
	N        int
	Provider string
	Model    string
	Outcome  string
	Blame    string
}

// request shows one request of the ledger: each attempt with its
// provider and whose doing its end was, tokens, cost and cache hit. The
// ledger holds no prompt, so neither does the page.
func (f *Filter) request(ctx context.Context, c *call, id string) (any, error) {
	r, ok, err := f.usage.Lookup(ctx, id, "")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, openaiapi.Errorf(http.StatusNotFound, openaiapi.TypeInvalidRequest, "unknown_request",
			"the ledger holds no request %q (yet: a request is recorded once it ends)", openaiapi.Clip(id))
	}
	v := &requestView{R: r, Attempts: attempts(r), Blame: endBlame(r), TraceURL: f.tracing.ViewerURL(r.TraceID)}
	return v, nil
}

// attempts rebuilds a request's attempts: every failed one is in its
// fallback reasons ("provider/model: 503" or "...: no response"), in
// order; an attempt past them is the one that answered.
func attempts(r ledger.Record) []attempt {
	var out []attempt
	for i, reason := range r.FallbackReasons {
		target, outcome, _ := strings.Cut(reason, ": ")
		provider, model, _ := strings.Cut(target, "/")
		out = append(out, attempt{N: i + 1, Provider: provider, Model: model, Outcome: outcome, Blame: attemptBlame(outcome)})
	}
	if r.Attempts > len(r.FallbackReasons) {
		out = append(out, attempt{N: r.Attempts, Provider: r.Provider, Model: r.ServedModel, Outcome: strconv.Itoa(r.Status), Blame: endBlame(r)})
	}
	return out
}

// attemptBlame says whose doing a failed attempt was: every failure that
// makes the gateway try another provider is the provider's.
func attemptBlame(outcome string) string {
	switch outcome {
	case "no response":
		return "provider: no response"
	case "429":
		return "provider: rate limited"
	}
	return "provider: error"
}

// endBlame says whose doing a request's outcome was.
func endBlame(r ledger.Record) string {
	switch {
	case r.Status == 0:
		return "unknown: no status recorded"
	case r.Status < 400 && r.ErrorType == "":
		return "none: served"
	case r.Status < 400:
		return fmt.Sprintf("provider: the answer ended in an error (%s)", r.ErrorType)
	case r.ErrorType == "client_disconnected":
		return "client: it went away before the answer"
	case r.Attempts == 0:
		return fmt.Sprintf("gateway: refused before any provider (%s)", r.ErrorType)
	case r.Status == 429 || r.Status >= 500:
		return fmt.Sprintf("provider: %d (%s)", r.Status, r.ErrorType)
	}
	return fmt.Sprintf("client: the provider refused the request as sent (%s)", r.ErrorType)
}
