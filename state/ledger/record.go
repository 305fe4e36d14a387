package ledger

import (
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// Record is one row of the ledger: the accounting of one request, whether it
// was served, refused or failed. It never holds a key, only the key's name.
type Record struct {
	// RequestID identifies the request and the row: writing a record whose
	// RequestID is already in the ledger changes nothing.
	RequestID string
	// Time is when the request started. The ledger keeps microseconds, in UTC.
	Time    time.Time
	Tenant  string
	App     string
	KeyName string
	Route   string
	// RequestedModel is the model the client asked for; ServedModel and
	// Provider are those of the last attempt, empty when none was made.
	RequestedModel string
	ServedModel    string
	Provider       string
	Stream         bool
	Attempts       int
	// FallbackReasons says why each failed attempt was given up, in order.
	FallbackReasons []string
	InputTokens     int64
	OutputTokens    int64
	CachedTokens    int64
	// CostMicros is the cost in micro-USD (1 USD = 1_000_000).
	CostMicros int64
	// StrongCostMicros is what the request would have cost on the route's
	// strongest model, for a request the router chose the model of
	// ("model": "auto"); zero when the client named the model.
	StrongCostMicros int64
	// Latency and TimeToFirstToken are kept in microseconds; a zero
	// TimeToFirstToken means no token was sent.
	Latency          time.Duration
	TimeToFirstToken time.Duration
	Status           int
	ErrorType        string
	// SavedMicros is what an answer of the response cache saved (provider
	// "cache"): what the provider charged for it when it was made. Zero
	// for every other row, a degraded answer included.
	SavedMicros int64
	// CacheHit is set when the provider served part of the prompt from
	// its prompt cache (CachedTokens > 0).
	CacheHit bool
	// UsageEstimated is set when the token counts are the gateway's
	// estimate: the provider's own count never arrived (a stream cut short).
	UsageEstimated bool
	// PriceSource says where the price CostMicros was computed at comes
	// from: catalog, pattern or estimated (policy.PriceSource); empty when
	// no attempt was made.
	PriceSource string
	// TraceID is the request's OpenTelemetry trace, in hex; empty when
	// tracing was off.
	TraceID string
	// RouteReason says in a few words why the router chose the plan, as
	// X-Switchyard-Route-Reason does; empty when no plan was made.
	RouteReason string
	// Tags are the request's billing tags, key to value; nil when it has
	// none.
	Tags map[string]string
	// SessionID names the client's session the request belongs to (an
	// agent's conversation); empty when none was given.
	SessionID string
	// Domain is the request's domain on a route that learns domain
	// priors: the fingerprint of its system prompt, 16 hex digits (with
	// Tenant and App it names the domain); empty elsewhere. RoutingScore
	// is the complexity score the router computed, 0 when none.
	Domain       string
	RoutingScore float64
}

// Model is the model a record is grouped and filtered by: the one that
// served the request or, when no attempt was made, the one requested, so
// that refusals count against the model they asked for.
func (r *Record) Model() string {
	if r.ServedModel != "" {
		return r.ServedModel
	}
	return r.RequestedModel
}

// maxText bounds every text column. Some of them (the requested model) come
// from the client, and a record the database refuses would be lost.
const maxText = 256

// normalized returns r as the ledger stores it: time in UTC truncated to
// microseconds, durations truncated to microseconds, text valid UTF-8
// without NUL bytes (PostgreSQL refuses both) and at most maxText bytes.
func (r Record) normalized() Record {
	r.Time = r.Time.UTC().Truncate(time.Microsecond)
	r.Latency = r.Latency.Truncate(time.Microsecond)
	r.TimeToFirstToken = r.TimeToFirstToken.Truncate(time.Microsecond)
	for _, s := range []*string{
		&r.RequestID, &r.Tenant, &r.App, &r.KeyName, &r.Route,
		&r.RequestedModel, &r.ServedModel, &r.Provider, &r.ErrorType, &r.PriceSource, &r.TraceID, &r.RouteReason, &r.SessionID, &r.Domain,
	} {
		*s = cleanText(*s)
	}
	if math.IsNaN(r.RoutingScore) || math.IsInf(r.RoutingScore, 0) {
		r.RoutingScore = 0 // neither engine stores it as the same value
	}
	if len(r.Tags) == 0 {
		r.Tags = nil
	} else {
		tags := make(map[string]string, len(r.Tags))
		for k, v := range r.Tags {
			tags[cleanText(k)] = cleanText(v)
		}
		r.Tags = tags
	}
	if r.FallbackReasons != nil {
		reasons := make([]string, len(r.FallbackReasons))
		for i, s := range r.FallbackReasons {
			reasons[i] = cleanText(s)
		}
		r.FallbackReasons = reasons
	}
	return r
}

func cleanText(s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) && len(s) <= maxText {
		return s
	}
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
	if len(s) <= maxText {
		return s
	}
	cut := maxText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// Filter selects ledger rows. Zero fields select everything.
type Filter struct {
	// From is inclusive and To exclusive.
	From, To time.Time
	// RequestID selects one request.
	RequestID string
	Tenant    string
	App       string
	// Model matches [Record.Model].
	Model string
	// Session selects the requests of one client session.
	Session string
	// Tags selects the requests that carry every one of these tags.
	Tags map[string]string
}

// Match reports whether f selects r; it is the rule the SQL implements.
func (f Filter) Match(r *Record) bool {
	t := r.Time.UTC().Truncate(time.Microsecond)
	return (f.From.IsZero() || !t.Before(f.From.UTC().Truncate(time.Microsecond))) &&
		(f.To.IsZero() || t.Before(f.To.UTC().Truncate(time.Microsecond))) &&
		(f.RequestID == "" || f.RequestID == r.RequestID) &&
		(f.Tenant == "" || f.Tenant == r.Tenant) &&
		(f.App == "" || f.App == r.App) &&
		(f.Model == "" || f.Model == r.Model()) &&
		(f.Session == "" || f.Session == r.SessionID) &&
		hasTags(r.Tags, f.Tags)
}

// hasTags reports whether tags holds every tag of want.
func hasTags(tags, want map[string]string) bool {
	for k, v := range want {
		if got, ok := tags[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Dimension is a column that usage can be grouped by.
type Dimension string

// The dimensions, named as the usage API spells them.
const (
	ByTenant   Dimension = "tenant"
	ByApp      Dimension = "app"
	ByModel    Dimension = "model"
	ByProvider Dimension = "provider"
	ByKey      Dimension = "key"
	ByRoute    Dimension = "route"
	BySession  Dimension = "session"
)

// tagPrefix starts a dimension by the value of one tag.
const tagPrefix = "tag:"

// ByTag is the dimension of a tag's value: requests without the tag
// group as the empty string. A query groups by one tag at most.
func ByTag(key string) Dimension { return Dimension(tagPrefix + key) }

// TagKey is the tag a dimension groups by, "" for the other dimensions.
func (d Dimension) TagKey() string {
	if k, ok := strings.CutPrefix(string(d), tagPrefix); ok {
		return k
	}
	return ""
}

// column is the ledger column behind a dimension; only these strings are
// ever spliced into SQL.
func (d Dimension) column() (string, error) {
	switch d {
	case ByTenant:
		return "tenant", nil
	case ByApp:
		return "app", nil
	case ByModel:
		return "model", nil
	case ByProvider:
		return "provider", nil
	case ByKey:
		return "key_name", nil
	case ByRoute:
		return "route", nil
	case BySession:
		return "session_id", nil
	}
	return "", fmt.Errorf("ledger: unknown dimension %q", string(d))
}

// Group holds the values of the dimensions a row was grouped by; the others
// are empty.
type Group struct {
	Tenant   string `json:"tenant,omitempty"`
	App      string `json:"app,omitempty"`
	Model    string `json:"model,omitempty"`
	Provider string `json:"provider,omitempty"`
	Key      string `json:"key,omitempty"`
	Route    string `json:"route,omitempty"`
	Session  string `json:"session,omitempty"`
	// Tag is the value of the tag the rows were grouped by (the report
	// names its key); "" for the requests without it.
	Tag string `json:"tag,omitempty"`
}

func (g *Group) field(d Dimension) *string {
	switch d {
	case ByTenant:
		return &g.Tenant
	case ByApp:
		return &g.App
	case ByModel:
		return &g.Model
	case ByProvider:
		return &g.Provider
	case ByKey:
		return &g.Key
	case BySession:
		return &g.Session
	case ByRoute:
		return &g.Route
	default: // a tag; Query validates dimensions before it scans
		return &g.Tag
	}
}

// Totals are the sums over a set of records. Errors counts records whose
// status is 400 or more.
type Totals struct {
	Requests     int64 `json:"requests"`
	Errors       int64 `json:"errors"`
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	CachedTokens int64 `json:"cached_tokens"`
	CostMicros   int64 `json:"cost_micro_usd"`
	// SavedMicros sums the rows' [Record.SavedMicros]: what the response
	// cache saved.
	SavedMicros int64 `json:"saved_micro_usd"`
}

// Add counts r in t.
func (t *Totals) Add(r *Record) {
	t.Requests++
	if r.Status >= 400 {
		t.Errors++
	}
	t.InputTokens += r.InputTokens
	t.OutputTokens += r.OutputTokens
	t.CachedTokens += r.CachedTokens
	t.CostMicros += r.CostMicros
	t.SavedMicros += r.SavedMicros
}

// Row is one line of a usage report.
type Row struct {
	Group
	Totals
}
