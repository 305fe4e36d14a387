// Package judge is the judge filter: a small, bounded share of the answers
// auto routing had a weaker model give are graded, off the request path,
// by a configured model against the answer the strongest model gives to
// the same conversation. Each verdict is a rating the route's calibrator
// takes like an app's feedback, so the strong share moves with evidence
// even where no app rates its answers.
//
// On a route that learns domain priors (routing.learn) the verdicts also
// teach the request's domain, and the judge grades the other way round
// too: a drawn request the strong model served has the weak model answer
// it again, and that answer is graded against the served one, at a weak
// model's price. The strong answers it buys to grade weak ones against
// are the learning's exploration, held to its share of the route's strong
// calls; its draws lean toward the domains whose estimates are least
// sure.
package judge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/filters/judge/judgespec"
	"github.com/switchyard/switchyard/state/calibration"
	"github.com/switchyard/switchyard/state/ledger"
	"github.com/switchyard/switchyard/state/priors"
)

func init() { filters.Register("judge", New) }

// Bounds on the work a grading does off the request path.
const (
	// maxGradings is how many gradings one route runs at once; a sampled
	// answer past it is skipped, never queued.
	maxGradings = 4
	// gradeTimeout bounds a grading's two calls together.
	gradeTimeout = 2 * time.Minute
	// maxReply bounds what is read of an answer to the judge's calls.
	maxReply = 1 << 20
	// verdictTokens caps the judge model's reply: one line.
	verdictTokens = 16
)

// Filter grades a sample of one route's weaker answers.
type Filter struct {
	args      judgespec.Args
	reference string // the model whose answer is the reference
	weak      string // the model whose answer a strong one is graded against
	key       string // the virtual key of the judge's calls
	url       string // the route on the gateway's listener
	route     string
	cal       *calibration.Calibrator
	learn     *priors.Learner
	ledger    ledger.Ledger // nil: verdicts are not recorded
	log       *slog.Logger
	metrics   *metrics
	limiter   *rate.Limiter
	slots     chan struct{}
	client    *http.Client
	draw      func() float64

	// pending holds each sampled exchange's grading, its answer once the
	// answer is complete, from the request body to Done.
	pending sync.Map // *filters.Exchange → *job
}

// job is one sampled answer, copied out of the exchange: the grading
// outlives it.
type job struct {
	requestID string
	tenant    string // "" on a route without auth
	served    string
	// domain is the request's domain on a learning route (nil
	// elsewhere), score its complexity score; shadow is set when the
	// strong model served it and the weak model's answer is the one
	// graded, against it.
	domain *priors.Domain
	score  float64
	shadow bool
	// ask is the other model's request body; conversation the messages
	// the judge reads.
	ask          []byte
	conversation []openaiapi.Message
	answer       string
	// trace is the graded request's: the grading is a trace of its own,
	// linked to it.
	trace *filters.Trace
}

type metrics struct {
	gradings *prometheus.CounterVec
	score    *prometheus.CounterVec
}

var collectors filters.Collectors[*metrics]

func newMetrics() (*metrics, []prometheus.Collector) {
	m := &metrics{
		gradings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_judge_gradings_total",
			Help: "Sampled answers of auto routing's weaker models, by route, tenant, served model and outcome: graded, shadow (on a learning route, a strong answer the weak model's was graded against), no_verdict (the judge's reply held no rating), failed (a call failed), rate_limited (past max_per_minute), busy (too many gradings at once), no_budget (the learning's exploration had no strong call left).",
		}, []string{"route", "tenant", "model", "outcome"}),
		score: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_judge_score_total",
			Help: "Sum of the judge's scores (0..1) of graded answers, by route, tenant and served model: divided by switchyard_judge_gradings_total{outcome=\"graded\"} it is the judged quality.",
		}, []string{"route", "tenant", "model"}),
	}
	return m, []prometheus.Collector{m.gradings, m.score}
}

// New builds the judge filter of a route.
func New(ref policy.FilterRef, deps filters.Deps) (filters.Filter, error) {
	args, err := judgespec.Parse(ref)
	if err != nil {
		return nil, err
	}
	if deps.Policy == nil || deps.Route == nil {
		return nil, errors.New("judge: built without its policy and route")
	}
	reference := args.Reference
	if reference == "" {
		m := deps.Policy.Strongest(func(*policy.Model) bool { return true })
		if m == nil {
			return nil, errors.New("judge: the policy has no chat model to answer the reference")
		}
		reference = m.Name
	}
	weak := args.Weak
	if weak == "" {
		if m := cheapest(deps.Policy); m != nil {
			weak = m.Name
		}
	}
	var key string
	if deps.Secrets != nil {
		if key, err = deps.Secrets.Resolve(args.APIKey); err != nil {
			return nil, fmt.Errorf("judge: api_key: %w", err)
		}
		if key == "" {
			return nil, fmt.Errorf("judge: api_key resolves to nothing (env %q, file %q)", args.APIKey.Env, args.APIKey.File)
		}
	}
	base := args.GatewayURL
	if base == "" {
		base = "http://" + net.JoinHostPort(loopback(deps.Policy.Gateway.ListenHost), strconv.Itoa(deps.Policy.Gateway.ListenPort))
	}
	return &Filter{
		args: args, reference: reference, weak: weak, key: key, url: strings.TrimRight(base, "/") + deps.Route.Path, route: deps.Route.Name,
		cal: deps.Calibration, learn: deps.Priors, ledger: deps.Usage, log: deps.Log(), metrics: collectors.For(deps.Metrics, newMetrics),
		limiter: rate.NewLimiter(rate.Limit(float64(args.MaxPerMinute)/60), args.MaxPerMinute),
		slots:   make(chan struct{}, maxGradings),
		client:  &http.Client{Timeout: gradeTimeout},
		draw:    rand.Float64,
	}, nil
}

// cheapest is the policy's cheapest chat model, by its blended price.
func cheapest(p *policy.Policy) *policy.Model {
	var best *policy.Model
	for _, m := range p.Models {
		if m.Caps.Has(policy.CapChat) && (best == nil || m.Price.InputPerMTok+m.Price.OutputPerMTok < best.Price.InputPerMTok+best.Price.OutputPerMTok) {
			best = m
		}
	}
	return best
}

// loopback is where this node's own listener is reached.
func loopback(host string) string {
	switch host {
	case "", "0.0.0.0":
		return "127.0.0.1"
	case "::":
		return "::1"
	}
	return host
}

// Name implements [filters.Filter].
func (*Filter) Name() string { return "judge" }

// RequestBody implements [filters.RequestBodyHook]: an auto-routed chat
// request is drawn for grading with the route's sample rate, weighed on
// a learning route by its domain's weight. Requests with tools or images
// are left out: the judge reads text.
func (f *Filter) RequestBody(_ context.Context, x *filters.Exchange) error {
	c := x.Chat
	if c == nil || x.Route == nil || c.Model != x.Route.Routing.AutoModel || c.UsesTools() || c.HasImages() || c.Choices() != 1 {
		return nil
	}
	sample := f.args.Sample
	if d := x.Routing.Domain; d != nil && d.JudgeWeight() > 0 {
		sample *= d.JudgeWeight()
	}
	if f.draw() >= sample {
		return nil
	}
	j := &job{requestID: x.ID, trace: x.Trace, domain: x.Routing.Domain, score: x.Routing.Score}
	if x.Caller.Tenant != nil {
		j.tenant = x.Caller.Tenant.Name
	}
	f.pending.Store(x, j)
	return nil
}

// ResponseChunk implements [filters.ResponseChunkHook]: a whole answer's
// text is kept for its grading; a stream's is the text its client was
// sent (Sent), read in Done.
func (f *Filter) ResponseChunk(_ context.Context, x *filters.Exchange, c *filters.Chunk) error {
	if x.Response.Streaming || !c.EOS || x.Response.Status != http.StatusOK {
		return nil
	}
	v, ok := f.pending.Load(x)
	if !ok {
		return nil
	}
	var answer openaiapi.ChatCompletion
	if json.Unmarshal(c.Data, &answer) == nil && len(answer.Choices) > 0 && answer.Choices[0].Message.Content != nil {
		v.(*job).answer = *answer.Choices[0].Message.Content
	}
	return nil
}

// Done implements [filters.DoneHook]: a sampled answer that a model other
// than the reference gave, and that its client received whole, is graded
// in the background, within the route's rate and concurrency bounds; on
// a learning route so is one the reference gave, against the weak
// model's, and a weaker one only while the learning may buy its
// reference.
func (f *Filter) Done(_ context.Context, x *filters.Exchange, cause error) {
	v, ok := f.pending.LoadAndDelete(x)
	if !ok || cause != nil || x.Response.Status != http.StatusOK || x.Cached.How != "" {
		return
	}
	a := x.LastAttempt()
	j := v.(*job)
	if a == nil || a.Target.Model == nil {
		return
	}
	if a.Target.Model.Name == f.reference {
		if j.domain == nil || f.learn == nil || f.weak == "" || f.weak == f.reference {
			return
		}
		j.shadow = true
	}
	if x.Response.Streaming {
		if !x.Sent.Complete || x.Sent.ErrorType != "" {
			return
		}
		j.answer = string(x.Sent.Text)
	}
	if j.answer == "" {
		return
	}
	j.served = a.Target.Model.Name
	if !f.limiter.Allow() {
		f.metrics.gradings.WithLabelValues(f.route, j.tenant, j.served, "rate_limited").Inc()
		return
	}
	select {
	case f.slots <- struct{}{}:
	default:
		f.metrics.gradings.WithLabelValues(f.route, j.tenant, j.served, "busy").Inc()
		return
	}
	other := f.reference
	switch {
	case j.shadow:
		other = f.weak
	case j.domain != nil && f.learn != nil && !j.domain.Explore():
		<-f.slots
		f.metrics.gradings.WithLabelValues(f.route, j.tenant, j.served, "no_budget").Inc()
		return
	}
	ask := *x.Chat
	ask.Model, ask.Stream, ask.StreamOptions, ask.User, ask.Metadata = other, false, nil, "", nil
	body, err := json.Marshal(&ask)
	if err != nil {
		<-f.slots
		return
	}
	j.ask, j.conversation = body, x.Chat.Messages
	go f.grade(j)
}

// grade asks the other model (the reference, or for a shadow grading the
// weak model) for its answer, then the judge model for its verdict, and
// hands the score to the route's calibrator and the domain's prior.
func (f *Filter) grade(j *job) {
	outcome := "failed"
	defer func() {
		if p := recover(); p != nil {
			f.log.Error("judge: grading panicked", "request_id", j.requestID, "route", f.route, "panic", fmt.Sprint(p))
			outcome = "failed"
		}
		f.metrics.gradings.WithLabelValues(f.route, j.tenant, j.served, outcome).Inc()
		<-f.slots
	}()
	ctx, cancel := context.WithTimeout(context.Background(), gradeTimeout)
	defer cancel()
	// The grading's calls go through the gateway with its trace context,
	// so their own spans join the grading's trace.
	ctx, span := j.trace.StartLinked(ctx, "switchyard.judge",
		attribute.String("switchyard.request_id", j.requestID), attribute.String("switchyard.route", f.route),
		attribute.String("switchyard.model", j.served), attribute.String("gen_ai.evaluation.name", "switchyard.judge"))
	defer func() {
		span.SetAttributes(attribute.String("switchyard.judge.outcome", outcome))
		if outcome == "failed" {
			span.SetStatus(codes.Error, "a call of the grading failed")
		}
		span.End()
	}()
	other, err := f.complete(ctx, j.ask)
	if err != nil {
		f.log.Warn("judge: the other model's answer failed", "request_id", j.requestID, "route", f.route, "shadow", j.shadow, "error", err.Error())
		return
	}
	reference, candidate := other, j.answer
	if j.shadow {
		reference, candidate = j.answer, other
	}
	tokens := verdictTokens
	verdict, err := f.complete(ctx, mustJSON(&openaiapi.ChatRequest{Model: f.args.Model, Messages: gradingMessages(j.conversation, reference, candidate), MaxTokens: &tokens}))
	if err != nil {
		f.log.Warn("judge: the verdict failed", "request_id", j.requestID, "route", f.route, "model", f.args.Model, "error", err.Error())
		return
	}
	score, ok := parseRating(verdict)
	if !ok {
		outcome = "no_verdict"
		return
	}
	span.AddEvent("gen_ai.evaluation.result", trace.WithAttributes(
		attribute.String("gen_ai.evaluation.name", "switchyard.judge"), attribute.Float64("gen_ai.evaluation.score.value", score)))
	if j.domain != nil && f.learn != nil {
		k := j.domain.Key()
		f.learn.Rate(f.route, j.tenant, k.App, k.FP, j.score, score, "judge")
	}
	if j.shadow {
		// A grade of an answer nobody was served: it teaches the domain
		// only, not the route's share nor the request's record.
		outcome = "shadow"
		f.log.Info("judge: graded the weak model's answer against a strong one", "request_id", j.requestID, "route", f.route, "tenant", j.tenant, "model", f.weak, "score", score)
		return
	}
	outcome = "graded"
	f.metrics.score.WithLabelValues(f.route, j.tenant, j.served).Add(score)
	if f.cal != nil {
		// The judge is the gateway's own: its verdicts move the route's
		// share as a whole.
		f.cal.Rate(f.route, "", score)
	}
	if f.ledger != nil {
		// Kept apart from the app's rating of the same answer; a ledger
		// that cannot take it loses the record, not the verdict.
		if err := f.ledger.Rate(ctx, ledger.Rating{RequestID: j.requestID, Score: score, Time: time.Now(), Judged: true}); err != nil {
			f.log.Warn("judge: the verdict was not recorded", "request_id", j.requestID, "route", f.route, "error", err.Error())
		}
	}
	f.log.Info("judge: graded", "request_id", j.requestID, "route", f.route, "tenant", j.tenant, "model", j.served, "score", score)
}

func mustJSON(r *openaiapi.ChatRequest) []byte {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err) // plain structs: cannot happen
	}
	return b
}

// complete sends one chat completion through the gateway with the judge's
// key and returns the answer's text. Its errors name the status and the
// error code, never the key.
func (f *Filter) complete(ctx context.Context, body []byte) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.url, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+f.key)
	req.Header.Set("Content-Type", "application/json")
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, err := f.client.Do(req)
	if err != nil {
		return "", errors.New("the gateway did not answer")
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxReply+1))
	if err != nil || len(raw) > maxReply {
		return "", fmt.Errorf("answer %d unreadable or over %d bytes", resp.StatusCode, maxReply)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct {
				Type string `json:"type"`
				Code string `json:"code"`
			} `json:"error"`
		}
		_ = json.Unmarshal(raw, &e)
		return "", fmt.Errorf("answered %d %s %s", resp.StatusCode, e.Error.Type, e.Error.Code)
	}
	var c openaiapi.ChatCompletion
	if err := json.Unmarshal(raw, &c); err != nil || len(c.Choices) == 0 || c.Choices[0].Message.Content == nil {
		return "", errors.New("answered 200 without a text answer")
	}
	return *c.Choices[0].Message.Content, nil
}

var (
	_ filters.RequestBodyHook   = (*Filter)(nil)
	_ filters.ResponseChunkHook = (*Filter)(nil)
	_ filters.DoneHook          = (*Filter)(nil)
)
