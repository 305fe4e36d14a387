package usage

import (
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/state/ledger"
)

// Bucket boundaries the OpenTelemetry GenAI semantic conventions advise for
// each histogram. The request duration's also hold the specification's
// boundaries (0.1, 0.5, 1, 2, 5 s), so that the recording rules of
// deploy/prometheus/recording.yml carry its request_duration_seconds
// exactly, from this one histogram.
var (
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.1, 0.16, 0.32, 0.5, 0.64, 1, 1.28, 2, 2.56, 5, 5.12, 10.24, 20.48, 40.96, 81.92}
	ttftBuckets     = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0}
)

// genAILabels are the OpenTelemetry GenAI attributes in Prometheus form
// (dots become underscores), then the gateway's own: who called, and the
// policy's name of the provider that served.
var genAILabels = []string{
	"gen_ai_operation_name", "gen_ai_provider_name", "gen_ai_request_model", "gen_ai_response_model",
	"tenant", "app", "provider",
}

type metrics struct {
	requests  *prometheus.CounterVec
	tokens    *prometheus.CounterVec
	cost      *prometheus.CounterVec
	fallbacks *prometheus.CounterVec
	decisions *prometheus.CounterVec
	split     *prometheus.CounterVec
	estimated *prometheus.CounterVec
	anonymous *prometheus.CounterVec
	auto      *prometheus.CounterVec
	saved     *prometheus.CounterVec

	tokenUsage *prometheus.HistogramVec
	duration   *prometheus.HistogramVec
	firstToken *prometheus.HistogramVec

	// bound holds the series each request touches, by their labels: one
	// map lookup instead of ten label lookups (each validates, hashes and
	// finds its values) per request.
	bound sync.Map // seriesKey → *series
}

// seriesKey is what labels a request's common series: its count, its
// tokens and cost, its GenAI histograms; ttft and usage say which of those
// it has.
type seriesKey struct {
	tenant, app, model, provider                    string
	status                                          int
	errorType, op, genAIProvider, requested, served string
	ttft, usage                                     bool
}

// series are one seriesKey's children; nil where the key has none.
type series struct {
	requests                                prometheus.Counter
	duration, firstToken, usageIn, usageOut prometheus.Observer
	tokensIn, tokensOut, tokensCached, cost prometheus.Counter
}

func (m *metrics) seriesOf(k seriesKey) *series {
	if s, ok := m.bound.Load(k); ok {
		return s.(*series)
	}
	s := &series{requests: m.requests.WithLabelValues(k.tenant, k.app, k.model, k.provider, strconv.Itoa(k.status))}
	if k.op != "" {
		g := []string{k.op, k.genAIProvider, k.requested, k.served, k.tenant, k.app, k.provider}
		s.duration = m.duration.WithLabelValues(append([]string{k.errorType}, g...)...)
		if k.ttft {
			s.firstToken = m.firstToken.WithLabelValues(g...)
		}
		if k.usage {
			s.usageIn = m.tokenUsage.WithLabelValues(append([]string{"input"}, g...)...)
			s.usageOut = m.tokenUsage.WithLabelValues(append([]string{"output"}, g...)...)
			s.tokensIn = m.tokens.WithLabelValues(k.tenant, k.app, k.model, k.provider, "input")
			s.tokensOut = m.tokens.WithLabelValues(k.tenant, k.app, k.model, k.provider, "output")
			s.tokensCached = m.tokens.WithLabelValues(k.tenant, k.app, k.model, k.provider, "cached")
			s.cost = m.cost.WithLabelValues(k.tenant, k.app, k.model, k.provider)
		}
	}
	v, _ := m.bound.LoadOrStore(k, s)
	return v.(*series)
}

var collectors filters.Collectors[*metrics]

// metricsFor returns the collectors registered on reg, made on its first
// use: the filters of every policy reload share them.
func metricsFor(reg prometheus.Registerer) *metrics { return collectors.For(reg, newMetrics) }

func newMetrics() (*metrics, []prometheus.Collector) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_usage_requests_total", Help: "Requests recorded, by tenant, app, model, provider and status (499: the client left before the answer was complete).",
		}, []string{"tenant", "app", "model", "provider", "status"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_usage_tokens_total", Help: "Tokens used, by tenant, app, model, provider and type (input, output, cached).",
		}, []string{"tenant", "app", "model", "provider", "type"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_usage_cost_micro_usd_total", Help: "Cost in micro-USD, by tenant, app, model and provider.",
		}, []string{"tenant", "app", "model", "provider"}),
		fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_usage_fallbacks_total", Help: "Attempts given up for the next one, by the provider and model that failed, why (its status, or no_response) and the GenAI operation (chat, embeddings).",
		}, []string{"provider", "model", "reason", "gen_ai_operation_name"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_usage_routing_decisions_total", Help: "Routing decisions, by route, kind (client: the model the client named; rule; strategy) and the rule's or strategy's name.",
		}, []string{"route", "kind", "name"}),
		split: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_usage_split_requests_total", Help: "Auto-routed requests of a route with a traffic split, by route and arm (the candidate model, or control), with the model that served.",
		}, []string{"route", "arm", "model"}),
		estimated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_usage_estimated_total", Help: "Requests billed from the gateway's token estimate because the provider's count never arrived, by tenant and model.",
		}, []string{"tenant", "model"}),
		anonymous: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_usage_unauthenticated_total", Help: "Requests refused with 401 before any caller was known, by route: counted here, not recorded in the ledger or the audit trail.",
		}, []string{"route"}),
		auto: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_usage_auto_cost_micro_usd_total", Help: "Auto-routed requests' cost in micro-USD, by route, tenant and basis: actual (what they cost) or all_strong (what the strongest model the caller may use would have cost); the difference is what auto routing saved.",
		}, []string{"route", "tenant", "basis"}),
		saved: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_usage_cache_saved_micro_usd_total", Help: "What response cache hits saved in micro-USD, by tenant, app and model: the provider's price of each answer when it was made.",
		}, []string{"tenant", "app", "model"}),
		tokenUsage: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gen_ai_client_token_usage", Help: "Number of input and output tokens used per request (OpenTelemetry gen_ai.client.token.usage).",
			Buckets: tokenBuckets,
		}, append([]string{"gen_ai_token_type"}, genAILabels...)),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gen_ai_server_request_duration_seconds", Help: "Time from the request to the last byte of its answer (OpenTelemetry gen_ai.server.request.duration).",
			Buckets: durationBuckets,
		}, append([]string{"error_type"}, genAILabels...)),
		firstToken: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gen_ai_server_time_to_first_token_seconds", Help: "Time from the request to the first generated token sent to the client, for successful answers (OpenTelemetry gen_ai.server.time_to_first_token).",
			Buckets: ttftBuckets,
		}, genAILabels),
	}
	return m, []prometheus.Collector{m.requests, m.tokens, m.cost, m.fallbacks, m.decisions, m.split, m.estimated, m.anonymous, m.auto, m.saved, m.tokenUsage, m.duration, m.firstToken}
}

func (m *metrics) observe(x *filters.Exchange, r *ledger.Record) {
	model := metricModel(x, r)
	for _, f := range failures(x) {
		if f.n < r.Attempts {
			reason := f.reason
			if reason == noResponse {
				reason = "no_response"
			}
			m.fallbacks.WithLabelValues(f.target.Provider().Name, f.target.Model.Series(), reason, operation(x)).Inc()
		}
	}
	if x.RouteReason != "" {
		kind, name := decision(x.RouteReason)
		m.decisions.WithLabelValues(r.Route, kind, name).Inc()
	}
	if x.Routing.Split != "" {
		m.split.WithLabelValues(r.Route, x.Routing.Split, r.ServedModel).Inc()
	}
	k := seriesKey{tenant: r.Tenant, app: r.App, model: model, provider: r.Provider, status: r.Status}
	// No model API reached (op ""): nothing GenAI to tell.
	if k.op = operation(x); k.op != "" {
		k.errorType, k.genAIProvider, k.requested = r.ErrorType, providerName(x), labelOf(x.Policy, r.RequestedModel)
		if r.ServedModel != "" {
			k.served = model
		}
		k.ttft, k.usage = r.TimeToFirstToken > 0 && r.ErrorType == "", x.Usage.Known
	}
	s := m.seriesOf(k)
	s.requests.Inc()
	if k.op == "" {
		return
	}
	s.duration.Observe(r.Latency.Seconds())
	if k.ttft {
		s.firstToken.Observe(r.TimeToFirstToken.Seconds())
	}
	if !k.usage {
		return
	}
	s.usageIn.Observe(float64(r.InputTokens))
	s.usageOut.Observe(float64(r.OutputTokens))
	s.tokensIn.Add(float64(r.InputTokens))
	s.tokensOut.Add(float64(r.OutputTokens))
	s.tokensCached.Add(float64(r.CachedTokens))
	s.cost.Add(float64(r.CostMicros))
	if r.UsageEstimated {
		m.estimated.WithLabelValues(r.Tenant, model).Inc()
	}
	if r.SavedMicros > 0 {
		m.saved.WithLabelValues(r.Tenant, r.App, model).Add(float64(r.SavedMicros))
	}
	if r.StrongCostMicros > 0 {
		m.auto.WithLabelValues(r.Route, r.Tenant, "actual").Add(float64(r.CostMicros))
		m.auto.WithLabelValues(r.Route, r.Tenant, "all_strong").Add(float64(r.StrongCostMicros))
	}
}

// metricModel is the model a record counts under in metrics: the one that
// served it, else the one requested if the policy knows it. A name only
// the client made up is never a label value: a model an open pattern
// served counts under the pattern ([policy.Model.Series]).
func metricModel(x *filters.Exchange, r *ledger.Record) string {
	if a := x.LastAttempt(); a != nil && x.Cached.How == "" {
		return a.Target.Model.Series()
	}
	return labelOf(x.Policy, r.Model())
}

// labelOf is what a model name a client sent may be as a label: an alias
// or the policy's name of the model it stands for, "" for a name the
// policy does not know.
func labelOf(p *policy.Policy, name string) string {
	if p == nil {
		return ""
	}
	switch res := p.Resolve(name); {
	case res.Alias != "":
		return name
	case res.Model != nil:
		return res.Model.Series()
	}
	return ""
}

// operation is the GenAI operation name of the exchange's API, "" when the
// request never named one (refused before its body was read).
func operation(x *filters.Exchange) string {
	switch {
	case x.Chat != nil:
		return "chat"
	case x.Embeddings != nil:
		return "embeddings"
	}
	return ""
}

// providerName is gen_ai.provider.name for the provider that served: the
// convention's well-known value for the provider's kind, or the policy's
// name for an OpenAI-compatible server the convention does not know.
func providerName(x *filters.Exchange) string {
	a := x.LastAttempt()
	if a == nil {
		return ""
	}
	p := a.Target.Provider()
	switch p.Kind {
	case policy.KindOpenAI:
		return "openai"
	case policy.KindAzureOpenAI:
		return "azure.ai.openai"
	case policy.KindAnthropic:
		return "anthropic"
	case policy.KindGemini:
		return "gcp.gemini"
	}
	return p.Name
}

// decision reads the router's reason ("rule NAME; …", "strategy NAME; …",
// "model named by the client; …") as a kind and a name.
func decision(reason string) (kind, name string) {
	head, _, _ := strings.Cut(reason, ";")
	switch {
	case strings.HasPrefix(head, "rule "):
		return "rule", strings.TrimPrefix(head, "rule ")
	case strings.HasPrefix(head, "strategy "):
		return "strategy", strings.TrimPrefix(head, "strategy ")
	case strings.Contains(head, "named by the client"):
		return "client", ""
	}
	return "other", ""
}
