package priors

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	domains  *prometheus.GaugeVec
	verdicts *prometheus.CounterVec
	explored *prometheus.CounterVec
	learnt   *prometheus.GaugeVec
}

func newMetrics() *metrics {
	return &metrics{
		domains: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "switchyard_routing_domains",
			Help: "Domains (app and system prompt) a learning route knows of a tenant, by mode: prior (no verdict yet: routed as the tenant's average), shifted (its score shifted by what its verdicts say), strong or weak (every request to that tier).",
		}, []string{"route", "tenant", "mode"}),
		verdicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_routing_domain_verdicts_total",
			Help: "Verdicts on weak answers a learning route took into its domains' priors, by source: judge (the route's judge) or feedback (the app's rating).",
		}, []string{"route", "tenant", "source"}),
		explored: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_routing_explored_total",
			Help: "Strong calls a learning route's judge bought to grade weak answers against (exploration), within routing.learn.explore of the route's strong calls.",
		}, []string{"route"}),
		learnt: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "switchyard_routing_learnt_share",
			Help: "Share of a tenant's recent auto-routed requests on a learning route that fell in domains with verdicts of their own (routed by what they learnt, not the prior).",
		}, []string{"route", "tenant"}),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.domains, m.verdicts, m.explored, m.learnt}
}

var modes = []string{ModePrior, ModeShifted, ModeStrong, ModeWeak}

// publish sets a tenant's gauges after a refresh.
func (m *metrics) publish(route, tenant string, byMode map[string]float64, learnt, requests float64) {
	for _, mode := range modes {
		m.domains.WithLabelValues(route, tenant, mode).Set(byMode[mode])
	}
	if requests > 0 {
		m.learnt.WithLabelValues(route, tenant).Set(learnt / requests)
	}
}

// forget drops a route's series.
func (m *metrics) forget(route string) {
	l := prometheus.Labels{"route": route}
	m.domains.DeletePartialMatch(l)
	m.verdicts.DeletePartialMatch(l)
	m.explored.DeletePartialMatch(l)
	m.learnt.DeletePartialMatch(l)
}
