package health

import "github.com/prometheus/client_golang/prometheus"

var (
	providerStateDesc = prometheus.NewDesc("switchyard_router_provider_health",
		"1 for the provider's current health state (healthy, degraded, unavailable), 0 for the others.",
		[]string{"provider", "state"}, nil)
	modelStateDesc = prometheus.NewDesc("switchyard_router_model_health",
		"1 for the model's own current health state (healthy, degraded, unavailable), 0 for the others.",
		[]string{"provider", "model", "state"}, nil)
	breakerStateDesc = prometheus.NewDesc("switchyard_router_breaker_state",
		"1 for the provider's current circuit-breaker state (closed, open, half_open), 0 for the others.",
		[]string{"provider", "state"}, nil)
	canaryShareDesc = prometheus.NewDesc("switchyard_router_canary_share",
		"Share of its requests a model's canary (and its provider's) admits; 1 without a canary.",
		[]string{"provider", "model"}, nil)
)

// Collector returns a prometheus.Collector that reports, at each scrape,
// the health state of every provider and model, each provider's breaker
// state and each model's canary share. Labels are provider and model
// names from the policy (see [Monitor]), so their number is bounded.
// Register it once: it follows the monitor across reloads.
func (m *Monitor) Collector() prometheus.Collector { return collector{m} }

type collector struct{ m *Monitor }

// Describe implements prometheus.Collector.
func (collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- providerStateDesc
	ch <- modelStateDesc
	ch <- breakerStateDesc
	ch <- canaryShareDesc
}

// Collect implements prometheus.Collector.
func (c collector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.m.Snapshot() {
		for s := range stateNames {
			ch <- prometheus.MustNewConstMetric(providerStateDesc, prometheus.GaugeValue,
				oneIf(State(s) == p.State), p.Provider, stateNames[s])
		}
		for s := range breakerNames {
			ch <- prometheus.MustNewConstMetric(breakerStateDesc, prometheus.GaugeValue,
				oneIf(BreakerState(s) == p.Breaker.State), p.Provider, breakerNames[s])
		}
		for _, md := range p.Models {
			for s := range stateNames {
				ch <- prometheus.MustNewConstMetric(modelStateDesc, prometheus.GaugeValue,
					oneIf(State(s) == md.State), p.Provider, md.Model, stateNames[s])
			}
			ch <- prometheus.MustNewConstMetric(canaryShareDesc, prometheus.GaugeValue, md.Share, p.Provider, md.Model)
		}
	}
}

func oneIf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

var _ prometheus.Collector = collector{}
