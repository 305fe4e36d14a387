// Package prometheus holds Prometheus' configuration for Switchyard: the
// scrape configuration (prometheus.yml) and the alerting rules
// (alerts.yml), and the test that checks them with promtool, which
// Debian's prometheus package provides (make deps installs it).
package prometheus
