package feedback

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/state/calibration"
	"github.com/switchyard/switchyard/state/ledger"
	"github.com/switchyard/switchyard/state/ledger/ledgertest"
	"github.com/switchyard/switchyard/state/priors"
	"github.com/switchyard/switchyard/state/store"
)

const testPolicy = `
providers: [{name: oa, kind: openai, base_url: "http://127.0.0.1:1"}]
models:
  - {name: gpt, provider: oa, context_window: 1000, max_output_tokens: 100, price_usd_per_mtok: {input: 1, output: 2}}
routes:
  - {name: feedback, path: /v1/feedback, api: feedback, filters: [auth, feedback]}
tenants:
  - {name: acme}
  - {name: globex}
`

func TestParse(t *testing.T) {
	tests := []struct {
		name, body string
		wantScore  float64
		wantParam  string // "" with wantErr: the body as a whole
		wantErr    bool
	}{
		{name: "score", body: `{"request_id":"r1","score":0.25}`, wantScore: 0.25},
		{name: "score 0", body: `{"request_id":"r1","score":0}`, wantScore: 0},
		{name: "thumbs up", body: `{"request_id":"r1","thumbs":"up"}`, wantScore: 1},
		{name: "thumbs down", body: `{"request_id":"r1","thumbs":"down"}`, wantScore: 0},
		{name: "neither", body: `{"request_id":"r1"}`, wantErr: true, wantParam: "score"},
		{name: "both", body: `{"request_id":"r1","score":1,"thumbs":"up"}`, wantErr: true, wantParam: "score"},
		{name: "score above 1", body: `{"request_id":"r1","score":1.01}`, wantErr: true, wantParam: "score"},
		{name: "negative score", body: `{"request_id":"r1","score":-0.1}`, wantErr: true, wantParam: "score"},
		{name: "sideways thumbs", body: `{"request_id":"r1","thumbs":"meh"}`, wantErr: true, wantParam: "thumbs"},
		{name: "no request id", body: `{"score":1}`, wantErr: true, wantParam: "request_id"},
		{name: "request id too long", body: `{"request_id":"` + string(make([]byte, 129)) + `","score":1}`, wantErr: true},
		{name: "unknown field", body: `{"request_id":"r1","score":1,"stars":5}`, wantErr: true},
		{name: "two values", body: `{"request_id":"r1","score":1}{}`, wantErr: true},
		{name: "not JSON", body: `thumbs up`, wantErr: true},
		{name: "score as a string", body: `{"request_id":"r1","score":"1"}`, wantErr: true},
		{name: "too big", body: `{"request_id":"r1","score":1,"x":"` + string(make([]byte, maxBody)) + `"}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, score, err := parse([]byte(tt.body))
			if tt.wantErr {
				e := filters.AsError(err, "x")
				if err == nil || e.Status != http.StatusBadRequest || e.Code != "invalid_feedback" {
					t.Fatalf("got %v, want 400 invalid_feedback", err)
				}
				if tt.wantParam != "" && e.Param != tt.wantParam {
					t.Errorf("param %v, want %q", e.Param, tt.wantParam)
				}
				return
			}
			if err != nil || id != "r1" || score != tt.wantScore {
				t.Errorf("got %q, %v, %v; want r1, %v", id, score, err, tt.wantScore)
			}
		})
	}
}

// FuzzParse: no body panics the parser, and what it accepts is a rating
// the ledger takes.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"request_id":"r","score":0.5}`, `{"request_id":"r","thumbs":"up"}`, `{}`, `[`, `{"score":1e400}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		id, score, err := parse(b)
		if err == nil && (id == "" || len(id) > maxRequestID || !(score >= 0 && score <= 1)) {
			t.Fatalf("accepted %q as %q %v", b, id, score)
		}
	})
}

// TestOnlyTheTenantThatAskedMayRate drives the filter as the chain does
// after auth, over a real ledger: acme rates its own request (twice: the
// last counts), cannot rate globex's, and a rating shows in the ledger's
// quality figures and the metrics.
func TestOnlyTheTenantThatAskedMayRate(t *testing.T) {
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(testPolicy)}})
	if err != nil {
		t.Fatal(err)
	}
	acme, globex := p.Tenants[0], p.Tenants[1]
	db, w := ledgertest.WithWriter(t)
	w.Write(ledger.Record{RequestID: "mine", Time: ledgertest.T0, Tenant: "acme", Route: "chat", ServedModel: "gpt", Status: 200, CostMicros: 10, StrongCostMicros: 90})
	w.Write(ledger.Record{RequestID: "theirs", Time: ledgertest.T0, Tenant: "globex", Route: "chat", ServedModel: "gpt", Status: 200})
	reg := prometheus.NewRegistry()
	fl, err := New(policy.FilterRef{Name: "feedback"}, filters.Deps{Policy: p, Ledger: w, Usage: db, Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	f := fl.(*Filter)
	f.now = func() time.Time { return ledgertest.T0.Add(time.Minute) }
	post := func(tenant *policy.Tenant, method, body string) (int, []byte) {
		x := &filters.Exchange{ID: "fb", Policy: p, Route: p.Routes[0], Method: method, Path: "/v1/feedback", Body: []byte(body),
			Caller: filters.Caller{Tenant: tenant}}
		if err := f.RequestHeaders(context.Background(), x); err != nil {
			return filters.AsError(err, "fb").Status, nil
		}
		if err := f.RequestBody(context.Background(), x); err != nil {
			return filters.AsError(err, "fb").Status, nil
		}
		r := x.TakeReply()
		return r.Status, r.Body
	}
	tests := []struct {
		name       string
		tenant     *policy.Tenant
		method     string
		body       string
		wantStatus int
	}{
		{"own request", acme, http.MethodPost, `{"request_id":"mine","thumbs":"down"}`, 200},
		// A request is rated once: 300 ratings of it weigh as one.
		{"own request again", acme, http.MethodPost, `{"request_id":"mine","score":0.75}`, 409},
		{"another tenant's request", acme, http.MethodPost, `{"request_id":"theirs","score":1}`, 404},
		{"the other way round", globex, http.MethodPost, `{"request_id":"mine","score":0}`, 404},
		{"unknown request", acme, http.MethodPost, `{"request_id":"nobody","score":1}`, 404},
		{"no key", nil, http.MethodPost, `{"request_id":"mine","score":1}`, 401},
		{"GET", acme, http.MethodGet, ``, 405},
		{"bad body", acme, http.MethodPost, `{"request_id":"mine"}`, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := post(tt.tenant, tt.method, tt.body)
			if status != tt.wantStatus {
				t.Fatalf("status %d, want %d (%s)", status, tt.wantStatus, body)
			}
			if status == 200 {
				var a Answer
				if json.Unmarshal(body, &a) != nil || a.RequestID != "mine" || a.Route != "chat" || a.Model != "gpt" {
					t.Errorf("answer %s", body)
				}
			}
		})
	}
	q, err := db.Quality(context.Background(), ledger.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var mine ledger.Quality
	for _, r := range q {
		if r.Tenant == "acme" {
			mine = r
		}
	}
	if mine.Ratings != 1 || mine.MeanScore != 0 || mine.SavedMicros() != 80 {
		t.Errorf("acme's quality %+v: want the first rating (0) alone and 80 µUSD saved", mine)
	}
	if n := testutil.ToFloat64(f.metrics.ratings.WithLabelValues("chat", "acme", "gpt")); n != 1 {
		t.Errorf("ratings counted: %v, want the one accepted", n)
	}
	if s := testutil.ToFloat64(f.metrics.score.WithLabelValues("chat", "acme", "gpt")); s != 0 {
		t.Errorf("score sum: %v, want 0 (the first rating's)", s)
	}
}

// TestWeakAnswersTeachTheRouter: ratings of auto-routed answers a cheaper
// model gave reach the calibrator of routing.auto.adjust (thumbs down on
// them raise the route's strong share at the next refresh) and, on a
// learning route, the request's domain; ratings of answers the strongest
// model gave, of requests that named their model, or of failures do not.
func TestWeakAnswersTeachTheRouter(t *testing.T) {
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(testPolicy)}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		rec  ledger.Record
		weak bool
	}{
		{"auto, cheaper model", ledger.Record{Status: 200, CostMicros: 10, StrongCostMicros: 90}, true},
		{"auto, cheaper model, a domain of a learning route", ledger.Record{Status: 200, CostMicros: 10, StrongCostMicros: 90, Domain: "00000000000000aa", RoutingScore: 0.3}, true},
		{"auto, the strongest model", ledger.Record{Status: 200, CostMicros: 90, StrongCostMicros: 90, Domain: "00000000000000aa"}, false},
		{"model named by the client", ledger.Record{Status: 200, CostMicros: 10}, false},
		{"auto, failed", ledger.Record{Status: 502, StrongCostMicros: 90, Domain: "00000000000000aa"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := weakAnswer(&tt.rec); got != tt.weak {
				t.Fatalf("weakAnswer = %v, want %v", got, tt.weak)
			}
			db, w := ledgertest.WithWriter(t)
			cal := calibration.New("a", nil, nil, nil)
			cal.Track("chat", calibration.Target{Share: 0.4, HalfLife: time.Hour, MinSamples: 200, Adjust: &calibration.Adjust{Min: 0.3, Max: 0.6, Bar: 0.9}})
			learner := priors.New(store.NewMemory(store.Options{}), nil, nil)
			if _, err := learner.Track("chat", priors.Config{Curve: []float64{0.75, 1}, HalfLife: time.Hour, MaxDomains: 10, PriorWeight: 8}); err != nil {
				t.Fatal(err)
			}
			fl, err := New(policy.FilterRef{Name: "feedback"}, filters.Deps{Policy: p, Ledger: w, Usage: db, Metrics: prometheus.NewRegistry(), Calibration: cal, Priors: learner})
			if err != nil {
				t.Fatal(err)
			}
			f := fl.(*Filter)
			for i := range 30 {
				rec := tt.rec
				rec.RequestID, rec.Time, rec.Tenant, rec.App, rec.Route, rec.ServedModel = "r"+strconv.Itoa(i), ledgertest.T0, "acme", "web", "chat", "gpt"
				w.Write(rec)
				x := &filters.Exchange{ID: "fb", Policy: p, Route: p.Routes[0], Method: http.MethodPost, Path: "/v1/feedback",
					Body: []byte(`{"request_id":"` + rec.RequestID + `","thumbs":"down"}`), Caller: filters.Caller{Tenant: p.Tenants[0]}}
				if err := f.RequestBody(context.Background(), x); err != nil {
					t.Fatal(err)
				}
			}
			cal.Refresh(context.Background(), time.Minute)
			got := cal.Share("chat", "acme", 0.4)
			if want := map[bool]float64{true: 0.41, false: 0.4}[tt.weak]; math.Abs(got-want) > 1e-9 {
				t.Errorf("acme's strong share after 30 thumbs down: %g, want %g", got, want)
			}
			// One tenant's ratings move no other tenant's routing.
			if other := cal.Share("chat", "globex", 0.4); other != 0.4 {
				t.Errorf("another tenant's share moved to %g", other)
			}
			learner.Refresh(context.Background())
			verdicts := 0.0
			for _, d := range learner.Report("chat", "") {
				if d.Tenant != "acme" || d.App != "web" || d.Domain != "00000000000000aa" {
					t.Errorf("a rating taught %+v", d)
				}
				verdicts += d.Verdicts
			}
			if want := map[bool]float64{true: 30}[tt.weak && tt.rec.Domain != ""]; verdicts != want {
				t.Errorf("the domain took %v ratings, want %v", verdicts, want)
			}
		})
	}
}
