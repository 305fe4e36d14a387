// Package feedback is the feedback filter: POST /v1/feedback, an app's
// rating of an answer it got (a score or a thumbs up or down), recorded in
// the usage ledger against the request it names. Only the tenant that
// made a request may rate it; the caller's key says which tenant that is.
package feedback

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/filters/filterspec"
	"github.com/switchyard/switchyard/state/calibration"
	"github.com/switchyard/switchyard/state/ledger"
	"github.com/switchyard/switchyard/state/ledger/report"
	"github.com/switchyard/switchyard/state/priors"
)

func init() { filters.Register("feedback", New) }

// maxBody bounds a rating: a request ID and a number.
const maxBody = 4 << 10

// maxRequestID bounds the request ID named (Envoy's are 36 bytes).
const maxRequestID = 128

// Filter records ratings.
type Filter struct {
	src     report.Source
	cal     *calibration.Calibrator // nil: no auto route learns from ratings
	learn   *priors.Learner         // nil: no route learns domain priors
	now     func() time.Time
	metrics *metrics
}

type metrics struct {
	ratings *prometheus.CounterVec
	score   *prometheus.CounterVec
}

var collectors filters.Collectors[*metrics]

func newMetrics() (*metrics, []prometheus.Collector) {
	m := &metrics{
		ratings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_feedback_ratings_total", Help: "Ratings received through POST /v1/feedback, by the rated request's route, tenant and served model.",
		}, []string{"route", "tenant", "model"}),
		score: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_feedback_score_total", Help: "Sum of the ratings' scores (0..1; thumbs up 1, down 0), by route, tenant and served model: divided by switchyard_feedback_ratings_total it is the delivered quality.",
		}, []string{"route", "tenant", "model"}),
	}
	return m, []prometheus.Collector{m.ratings, m.score}
}

// New builds the feedback filter; it takes no arguments.
func New(ref policy.FilterRef, deps filters.Deps) (filters.Filter, error) {
	if err := filterspec.NoArgs(ref); err != nil {
		return nil, err
	}
	return &Filter{src: report.Source{Writer: deps.Ledger, Ledger: deps.Usage}, cal: deps.Calibration, learn: deps.Priors, now: time.Now, metrics: collectors.For(deps.Metrics, newMetrics)}, nil
}

// Name implements [filters.Filter].
func (*Filter) Name() string { return "feedback" }

// RequestHeaders implements [filters.RequestHeadersHook]: only POST, only
// with a tenant's key, before the body is read.
func (f *Filter) RequestHeaders(_ context.Context, x *filters.Exchange) error {
	if x.Method != http.MethodPost {
		return filters.Reject(http.StatusMethodNotAllowed, openaiapi.TypeInvalidRequest, "method_not_allowed", "use POST on %s", x.Route.Path)
	}
	if x.Caller.Tenant == nil {
		return filters.Reject(http.StatusUnauthorized, openaiapi.TypeInvalidRequest, "missing_api_key", "feedback needs the API key that made the request")
	}
	return nil
}

// Body is what a client posts: the request rated, and exactly one of a
// score and thumbs.
type Body struct {
	RequestID string   `json:"request_id"`
	Score     *float64 `json:"score"`
	Thumbs    string   `json:"thumbs"`
}

// parse reads and checks a rating.
func parse(b []byte) (id string, score float64, err error) {
	if len(b) > maxBody {
		return "", 0, bad("", "the body is over %d bytes", maxBody)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var in Body
	if err := dec.Decode(&in); err != nil {
		return "", 0, bad("", "the body must be a JSON object {\"request_id\": ..., \"score\": 0..1} or {\"request_id\": ..., \"thumbs\": \"up\"|\"down\"}: %v", err)
	}
	if dec.More() {
		return "", 0, bad("", "the body holds more than one JSON value")
	}
	switch {
	case in.RequestID == "" || len(in.RequestID) > maxRequestID:
		return "", 0, bad("request_id", "request_id must be the x-request-id of the answer rated (1..%d bytes)", maxRequestID)
	case in.Score != nil && in.Thumbs != "":
		return "", 0, bad("score", "give a score or thumbs, not both")
	case in.Score != nil:
		if !(*in.Score >= 0 && *in.Score <= 1) {
			return "", 0, bad("score", "score must be between 0 and 1")
		}
		return in.RequestID, *in.Score, nil
	case in.Thumbs == "up":
		return in.RequestID, 1, nil
	case in.Thumbs == "down":
		return in.RequestID, 0, nil
	case in.Thumbs != "":
		return "", 0, bad("thumbs", "thumbs must be \"up\" or \"down\"")
	}
	return "", 0, bad("score", "give a score (0..1) or thumbs (\"up\" or \"down\")")
}

func bad(param, format string, args ...any) error {
	e := filters.Reject(http.StatusBadRequest, openaiapi.TypeInvalidRequest, "invalid_feedback", format, args...)
	if param != "" {
		e = e.WithParam(param)
	}
	return e
}

// Answer is what a recorded rating returns.
type Answer struct {
	Object    string  `json:"object"`
	RequestID string  `json:"request_id"`
	Score     float64 `json:"score"`
	Route     string  `json:"route"`
	Model     string  `json:"model"`
}

// RequestBody implements [filters.RequestBodyHook]: the rating is
// recorded once the request it names is found among the caller's
// tenant's. Another tenant's request is answered as an unknown one, so
// that request IDs cannot be probed across tenants.
func (f *Filter) RequestBody(ctx context.Context, x *filters.Exchange) error {
	id, score, err := parse(x.Body)
	if err != nil {
		return err
	}
	tenant := x.Caller.Tenant.Name
	rec, ok, err := f.src.Lookup(ctx, id, tenant)
	if err != nil {
		return err
	}
	if !ok {
		return filters.Reject(http.StatusNotFound, openaiapi.TypeInvalidRequest, "request_not_found",
			"your tenant made no request with the ID %q (it may also not be recorded yet)", id).WithParam("request_id")
	}
	// A request is rated once: the ledger keeps the first rating, and a
	// second one weighs nothing anywhere.
	if err := f.src.Rate(ctx, ledger.Rating{RequestID: id, Score: score, Time: f.now()}); err != nil {
		return err
	}
	model := rec.Model()
	if x.Policy != nil && x.Policy.Model(model) == nil {
		model = "" // a name the client made up is never a label value
	}
	f.metrics.ratings.WithLabelValues(rec.Route, tenant, model).Inc()
	f.metrics.score.WithLabelValues(rec.Route, tenant, model).Add(score)
	if weakAnswer(&rec) {
		// An app's rating moves its own tenant's routing only.
		if f.cal != nil {
			f.cal.Rate(rec.Route, tenant, score)
		}
		if k, err := priors.ParseKey(rec.App, rec.Domain); f.learn != nil && err == nil {
			f.learn.Rate(rec.Route, tenant, k.App, k.FP, rec.RoutingScore, score, "feedback")
		}
	}
	body, err := json.Marshal(Answer{Object: "feedback", RequestID: id, Score: score, Route: rec.Route, Model: rec.Model()})
	if err != nil {
		return err
	}
	x.Respond(http.StatusOK, body)
	return nil
}

// weakAnswer tells an auto-routed answer a model cheaper than the
// route's strongest gave: the answers whose ratings say whether the
// router may keep sending that many requests to weaker models.
func weakAnswer(r *ledger.Record) bool {
	return r.StrongCostMicros > 0 && r.CostMicros < r.StrongCostMicros && r.Status < http.StatusBadRequest
}

var (
	_ filters.RequestHeadersHook = (*Filter)(nil)
	_ filters.RequestBodyHook    = (*Filter)(nil)
)
