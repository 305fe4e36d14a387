// Package prometheus holds Prometheus' configuration for Switchyard: the
// scrape configuration (prometheus.yml), the alerting rules (alerts.yml)
// and the recording rules that give the specification's metric names
// (recording.yml), and the test that checks them with promtool, which
// Debian's prometheus package provides (make deps installs it). The e2e
// suite loads them into a real Prometheus scraping a running gateway,
// drives the budget, provider and error-rate alerts from its own metrics
// and reads the recorded series against the ledger.
package prometheus
