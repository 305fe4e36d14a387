// Package prometheus holds Prometheus' configuration for Switchyard: the
// scrape configuration (prometheus.yml) and the alerting rules
// (alerts.yml), and the test that checks them with promtool, which
// Debian's prometheus package provides (make deps installs it). The e2e
// suite loads both into a real Prometheus scraping a running gateway and
// drives the budget, provider and error-rate alerts from its own metrics.
package prometheus
