package judge

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/filters/judge/judgespec"
	"github.com/switchyard/switchyard/filters/router/complexity"
	"github.com/switchyard/switchyard/state/ledger"
	"github.com/switchyard/switchyard/state/priors"
	"github.com/switchyard/switchyard/state/store"
)

const testKey = "sk-judge-secret"

// ratings is the ledger's part the judge uses: its verdicts.
type ratings struct {
	ledger.Ledger
	mu  sync.Mutex
	got []ledger.Rating
}

func (r *ratings) Rate(_ context.Context, x ledger.Rating) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, x)
	return nil
}

func (r *ratings) seen() []ledger.Rating {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ledger.Rating(nil), r.got...)
}

type keySource struct{}

func (keySource) Resolve(policy.SecretRef) (string, error) { return testKey, nil }

// gateway stands in for the gateway's listener: it records each call and
// answers the reference model with a text and the judge model with reply.
type gateway struct {
	mu     sync.Mutex
	calls  []openaiapi.ChatRequest
	auth   []string
	traces []string // each call's traceparent
	reply  string
	status int
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var req openaiapi.ChatRequest
	_ = json.Unmarshal(raw, &req)
	g.mu.Lock()
	g.calls, g.auth = append(g.calls, req), append(g.auth, r.Header.Get("Authorization"))
	g.traces = append(g.traces, r.Header.Get("traceparent"))
	status, reply := g.status, g.reply
	g.mu.Unlock()
	if status != 0 {
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"error":{"message":"no","type":"server_error","code":"provider_unavailable"}}`))
		return
	}
	text := "the reference answer"
	if req.Model == "grader" {
		text = reply
	}
	_ = json.NewEncoder(w).Encode(openaiapi.ChatCompletion{Object: "chat.completion", Model: req.Model,
		Choices: []openaiapi.Choice{{Message: openaiapi.ResponseMessage{Role: "assistant", Content: &text}, FinishReason: "stop"}}})
}

// seen returns the calls so far and their Authorization headers.
func (g *gateway) seen() ([]openaiapi.ChatRequest, []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]openaiapi.ChatRequest(nil), g.calls...), append([]string(nil), g.auth...)
}

func testPolicy(t *testing.T, args string) *policy.Policy {
	t.Helper()
	p, err := policy.Compile([]policy.File{{Name: "policy.yaml", Data: []byte(`
providers:
  - {name: openai, kind: openai, base_url: "https://x"}
models:
  - {name: weak, provider: openai, context_window: 1000, max_output_tokens: 100, quality: 0.5, price_usd_per_mtok: {input: 0.1, output: 0.1}}
  - {name: strong, provider: openai, context_window: 1000, max_output_tokens: 100, quality: 0.9, price_usd_per_mtok: {input: 5, output: 15}}
  - {name: grader, provider: openai, context_window: 1000, max_output_tokens: 100, quality: 0.8, price_usd_per_mtok: {input: 1, output: 1}}
routes:
  - name: chat
    path: /v1/chat/completions
    api: chat_completions
    filters: [auth, router, translate, usage, {name: judge, args: ` + args + `}]
`)}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type rig struct {
	f      *Filter
	p      *policy.Policy
	gw     *gateway
	log    *bytes.Buffer
	ledger *ratings
	// trace is the served exchanges' trace; nil: tracing off.
	trace *filters.Trace
	// domain is the served exchanges' domain on a learning route.
	domain *priors.Domain
}

func newRig(t *testing.T, args string) *rig {
	t.Helper()
	gw := &gateway{reply: "Rating: 8"}
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	p := testPolicy(t, strings.Replace(args, "URL", srv.URL, 1))
	var log bytes.Buffer
	l := &ratings{}
	ff, err := New(p.Routes[0].Filters[4], filters.Deps{Policy: p, Route: p.Routes[0], Secrets: keySource{}, Usage: l,
		Metrics: prometheus.NewRegistry(), Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	f := ff.(*Filter)
	f.draw = func() float64 { return 0 }
	return &rig{f: f, p: p, gw: gw, log: &log, ledger: l}
}

// serve runs one exchange through the filter's hooks: body asked, the
// model that served it, and its answer (streamed when stream is set).
func (r *rig) serve(t *testing.T, body, served string, status int, stream bool) {
	t.Helper()
	chat, perr := openaiapi.ParseChatRequest([]byte(body))
	if perr != nil {
		t.Fatal(perr)
	}
	x := &filters.Exchange{ID: "req-1", Policy: r.p, Route: r.p.Routes[0], Chat: chat, Plan: []filters.Target{{Model: r.p.Model(served)}},
		Caller: filters.Caller{Tenant: &policy.Tenant{Name: "acme"}}, Trace: r.trace, Routing: filters.Routing{Score: 0.3, Domain: r.domain}}
	ctx := context.Background()
	if err := r.f.RequestBody(ctx, x); err != nil {
		t.Fatal(err)
	}
	x.NewAttempt(1, time.Now())
	x.Response = filters.Response{Status: status, Streaming: stream}
	answer := "the weak answer"
	if stream {
		x.Sent = filters.Sent{Text: []byte(answer), Complete: true}
	} else {
		b, _ := json.Marshal(openaiapi.ChatCompletion{Choices: []openaiapi.Choice{{Message: openaiapi.ResponseMessage{Content: &answer}}}})
		if err := r.f.ResponseChunk(ctx, x, &filters.Chunk{Data: b, EOS: true}); err != nil {
			t.Fatal(err)
		}
	}
	r.f.Done(ctx, x, nil)
}

// outcomes waits for the gradings started to end and returns their
// count by outcome.
func (r *rig) outcomes(t *testing.T, served string) map[string]float64 {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(r.f.slots) > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	got := map[string]float64{}
	for _, o := range []string{"graded", "shadow", "no_verdict", "failed", "rate_limited", "busy", "no_budget"} {
		if n := testutil.ToFloat64(r.f.metrics.gradings.WithLabelValues("chat", "acme", served, o)); n > 0 {
			got[o] = n
		}
	}
	return got
}

const autoBody = `{"model":"auto","max_tokens":50,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"why is the sky blue?"}]}`

// TestGradesAWeakAnswer: the reference model answers the client's request
// again (not streamed), the judge model reads both answers, and its
// rating is the answer's score; both calls carry the judge's key.
func TestGradesAWeakAnswer(t *testing.T) {
	for _, stream := range []bool{false, true} {
		r := newRig(t, `{model: grader, api_key: {env: K}, gateway_url: URL}`)
		body := autoBody
		if stream {
			body = strings.Replace(body, `"max_tokens":50`, `"max_tokens":50,"stream":true,"stream_options":{"include_usage":true}`, 1)
		}
		r.serve(t, body, "weak", http.StatusOK, stream)
		if got := r.outcomes(t, "weak"); got["graded"] != 1 || len(got) != 1 {
			t.Fatalf("stream %v: outcomes %v, want one graded", stream, got)
		}
		if s := testutil.ToFloat64(r.f.metrics.score.WithLabelValues("chat", "acme", "weak")); !near(s, 7.0/9) {
			t.Errorf("score %v, want 7/9 (Rating: 8)", s)
		}
		if got := r.ledger.seen(); len(got) != 1 || got[0].RequestID != "req-1" || !got[0].Judged || !near(got[0].Score, 7.0/9) {
			t.Errorf("ledger ratings %+v, want the judge's 7/9 of req-1", got)
		}
		calls, auth := r.gw.seen()
		if len(calls) != 2 {
			t.Fatalf("%d calls, want the reference and the verdict", len(calls))
		}
		ref, verdict := calls[0], calls[1]
		if ref.Model != "strong" || ref.Stream || ref.StreamOptions != nil || len(ref.Messages) != 2 || ref.Messages[1].Content.Text != "why is the sky blue?" || ref.MaxTokens == nil || *ref.MaxTokens != 50 {
			t.Errorf("reference request %+v, want the client's request for the strongest model, not streamed", ref)
		}
		user := verdict.Messages[len(verdict.Messages)-1].Content.Text
		if verdict.Model != "grader" || !strings.Contains(user, "the reference answer") || !strings.Contains(user, "<candidate>\nthe weak answer\n</candidate>") {
			t.Errorf("verdict request for %q reads %q", verdict.Model, user)
		}
		for _, a := range auth {
			if a != "Bearer "+testKey {
				t.Errorf("a call went with Authorization %q", a)
			}
		}
	}
}

// TestLeftUngraded: only sampled, auto-routed, successful text answers of
// a model other than the reference are graded.
func TestLeftUngraded(t *testing.T) {
	tests := []struct {
		name, body, served string
		status             int
	}{
		{"a model the client named", strings.Replace(autoBody, `"auto"`, `"weak"`, 1), "weak", 200},
		{"the reference's own answer", autoBody, "strong", 200},
		{"an error", autoBody, "weak", 502},
		{"tools", strings.Replace(autoBody, `"max_tokens":50`, `"tools":[{"type":"function","function":{"name":"f"}}]`, 1), "weak", 200},
		{"several choices", strings.Replace(autoBody, `"max_tokens":50`, `"n":2`, 1), "weak", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, `{model: grader, api_key: {env: K}, gateway_url: URL}`)
			r.serve(t, tt.body, tt.served, tt.status, false)
			calls, _ := r.gw.seen()
			if got := r.outcomes(t, tt.served); len(got) != 0 || len(calls) != 0 {
				t.Errorf("outcomes %v, %d calls; want none", got, len(calls))
			}
		})
	}
	t.Run("not drawn", func(t *testing.T) {
		r := newRig(t, `{model: grader, sample: 0.25, api_key: {env: K}, gateway_url: URL}`)
		r.f.draw = func() float64 { return 0.25 }
		r.serve(t, autoBody, "weak", 200, false)
		if calls, _ := r.gw.seen(); len(calls) != 0 {
			t.Errorf("%d calls for an answer the sample left out", len(calls))
		}
	})
}

// TestBounded: past max_per_minute an answer is skipped, not queued; a
// failed call is counted, and its log line names the status, not the key.
func TestBounded(t *testing.T) {
	r := newRig(t, `{model: grader, max_per_minute: 1, api_key: {env: K}, gateway_url: URL}`)
	r.gw.status = http.StatusServiceUnavailable // set before any call
	r.serve(t, autoBody, "weak", 200, false)
	r.serve(t, autoBody, "weak", 200, false)
	if got := r.outcomes(t, "weak"); got["failed"] != 1 || got["rate_limited"] != 1 {
		t.Errorf("outcomes %v, want one failed and one rate_limited", got)
	}
	if log := r.log.String(); !strings.Contains(log, "503") || strings.Contains(log, testKey) {
		t.Errorf("log %q: want the status, never the key", log)
	}

	r = newRig(t, `{model: grader, api_key: {env: K}, gateway_url: URL}`)
	r.gw.reply = "A fine answer, I would say."
	r.serve(t, autoBody, "weak", 200, false)
	if got := r.outcomes(t, "weak"); got["no_verdict"] != 1 {
		t.Errorf("outcomes %v, want no_verdict for a reply without a rating", got)
	}
}

// TestDefaults: without reference the strongest chat model answers it;
// without gateway_url the calls go to the policy's listener.
func TestDefaults(t *testing.T) {
	p := testPolicy(t, `{model: grader, api_key: {env: K}}`)
	ff, err := New(p.Routes[0].Filters[4], filters.Deps{Policy: p, Route: p.Routes[0], Secrets: keySource{}})
	if err != nil {
		t.Fatal(err)
	}
	f := ff.(*Filter)
	if f.reference != "strong" || f.weak != "weak" || f.url != "http://127.0.0.1:8080/v1/chat/completions" || f.args.Sample != judgespec.DefaultSample || f.args.MaxPerMinute != judgespec.DefaultMaxPerMinute {
		t.Errorf("reference %q, weak %q, url %q, sample %v, max_per_minute %d", f.reference, f.weak, f.url, f.args.Sample, f.args.MaxPerMinute)
	}
}

// learningRig is a rig whose exchanges come from a domain of a route that
// learns, with the learner's strong-call budget for the judge.
func learningRig(t *testing.T, strongCalls int) (*rig, *priors.Learner, *priors.Route) {
	t.Helper()
	r := newRig(t, `{model: grader, api_key: {env: K}, gateway_url: URL}`)
	curve, err := complexity.DefaultCurve()
	if err != nil {
		t.Fatal(err)
	}
	l := priors.New(store.NewMemory(store.Options{}), nil, nil)
	pr, err := l.Track("chat", priors.Config{Curve: curve.Quality, HalfLife: time.Hour, MaxDomains: 10, PriorWeight: 8, Explore: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	r.f.learn, r.domain = l, pr.Domain("acme", "web", 42)
	for range strongCalls {
		r.domain.Routed(true)
	}
	return r, l, pr
}

// verdicts is what the learner took of acme's web domain, after a refresh.
func verdicts(t *testing.T, l *priors.Learner) float64 {
	t.Helper()
	l.Refresh(context.Background())
	for _, d := range l.Report("chat", "acme") {
		if d.App == "web" {
			return d.Verdicts
		}
	}
	return 0
}

// TestShadowGrading: on a learning route, a drawn request the strong
// model served has the weak model answer it again, and that answer is
// graded against the served one; the verdict teaches the domain only,
// not the route's share nor the request's record.
func TestShadowGrading(t *testing.T) {
	r, l, _ := learningRig(t, 0)
	r.serve(t, autoBody, "strong", http.StatusOK, false)
	if got := r.outcomes(t, "strong"); got["shadow"] != 1 || len(got) != 1 {
		t.Fatalf("outcomes %v, want one shadow grading", got)
	}
	calls, _ := r.gw.seen()
	if len(calls) != 2 || calls[0].Model != "weak" || calls[0].Stream {
		t.Fatalf("calls %+v, want the weak model's answer, then the verdict", calls)
	}
	user := calls[1].Messages[len(calls[1].Messages)-1].Content.Text
	// The served answer is the reference; the weak model's is the candidate.
	if !strings.Contains(user, "<reference>\nthe weak answer\n</reference>") || !strings.Contains(user, "<candidate>\nthe reference answer\n</candidate>") {
		t.Errorf("verdict request reads %q", user)
	}
	if n := verdicts(t, l); n != 1 {
		t.Errorf("the domain took %v verdicts, want 1", n)
	}
	if got := r.ledger.seen(); len(got) != 0 {
		t.Errorf("ledger ratings %+v: a shadow grade rates no served answer", got)
	}
	if s := testutil.ToFloat64(r.f.metrics.score.WithLabelValues("chat", "acme", "strong")); s != 0 {
		t.Errorf("judged score of the strong model %v, want none", s)
	}
}

// TestExplorationBudget: on a learning route a weak answer is graded only
// while the learning may buy the strong reference, a share of the strong
// calls routed.
func TestExplorationBudget(t *testing.T) {
	r, l, _ := learningRig(t, 0)
	r.serve(t, autoBody, "weak", http.StatusOK, false)
	if got := r.outcomes(t, "weak"); got["no_budget"] != 1 {
		t.Fatalf("with no strong call routed: outcomes %v, want no_budget", got)
	}
	for range 20 { // 5 % of 20 strong calls: one reference
		r.domain.Routed(true)
	}
	r.serve(t, autoBody, "weak", http.StatusOK, false)
	r.serve(t, autoBody, "weak", http.StatusOK, false)
	if got := r.outcomes(t, "weak"); got["graded"] != 1 || got["no_budget"] != 2 {
		t.Errorf("outcomes %v, want one graded, then no_budget again", got)
	}
	if n := verdicts(t, l); n != 1 {
		t.Errorf("the domain took %v verdicts, want 1", n)
	}
}

// TestDrawLeansOnTheDomain: a domain's weight scales the judge's sample.
func TestDrawLeansOnTheDomain(t *testing.T) {
	r, l, route := learningRig(t, 0)
	for range 300 {
		route.Domain("acme", "known", 1).Routed(false)
	}
	for range 100 {
		r.domain.Routed(false)
	}
	for range 200 {
		l.Rate("chat", "acme", "known", 1, 0.5, 1, "judge")
	}
	l.Refresh(context.Background())
	w := r.domain.JudgeWeight()
	if w <= 1 {
		t.Fatalf("a domain without verdicts weighs %v, want more than 1", w)
	}
	r.f.args.Sample = 0.2
	r.f.draw = func() float64 { return 0.2 * (1 + w) / 2 } // between the plain sample and the weighted one
	r.serve(t, autoBody, "strong", http.StatusOK, false)
	if got := r.outcomes(t, "strong"); got["shadow"] != 1 {
		t.Errorf("outcomes %v: the weighted draw should have taken it", got)
	}
}
