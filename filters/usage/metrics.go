package usage

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	requests *prometheus.CounterVec
	tokens   *prometheus.CounterVec
	cost     *prometheus.CounterVec
}

var (
	metricsMu sync.Mutex
	byReg     = map[prometheus.Registerer]*metrics{}
)

// metricsFor returns the collectors registered on reg, registering them on
// first use: a policy reload builds new filters but must not register the
// same metrics twice.
func metricsFor(reg prometheus.Registerer) *metrics {
	metricsMu.Lock()
	defer metricsMu.Unlock()
	if m, ok := byReg[reg]; ok {
		return m
	}
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_usage_requests_total", Help: "Requests recorded, by tenant, app, model, provider and status.",
		}, []string{"tenant", "app", "model", "provider", "status"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_usage_tokens_total", Help: "Tokens used, by tenant, app, model, provider and type (input, output, cached).",
		}, []string{"tenant", "app", "model", "provider", "type"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_usage_cost_micro_usd_total", Help: "Cost in micro-USD, by tenant, app, model and provider.",
		}, []string{"tenant", "app", "model", "provider"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.tokens, m.cost)
	}
	byReg[reg] = m
	return m
}

func (m *metrics) observe(r *Record) {
	m.requests.WithLabelValues(r.Tenant, r.App, r.ServedModel, r.Provider, strconv.Itoa(r.Status)).Inc()
	if !r.Usage.Known {
		return
	}
	m.tokens.WithLabelValues(r.Tenant, r.App, r.ServedModel, r.Provider, "input").Add(float64(r.Usage.PromptTokens))
	m.tokens.WithLabelValues(r.Tenant, r.App, r.ServedModel, r.Provider, "output").Add(float64(r.Usage.CompletionTokens))
	m.tokens.WithLabelValues(r.Tenant, r.App, r.ServedModel, r.Provider, "cached").Add(float64(r.Usage.CachedTokens))
	m.cost.WithLabelValues(r.Tenant, r.App, r.ServedModel, r.Provider).Add(float64(r.Usage.CostMicros))
}
