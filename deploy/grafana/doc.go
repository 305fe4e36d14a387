// Package grafana reads the Grafana dashboards shipped in dashboards/ (and
// provisioned by docker-compose.yml through provisioning/), so tests can
// hold them to account: every panel on the provisioned Prometheus data
// source (this package's tests), every query valid PromQL that returns
// data against a running gateway (e2e).
package grafana
