package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ErrNoPrometheus explains how to get Prometheus.
var ErrNoPrometheus = errors.New("prometheus not found: run `make deps` (apt-get install prometheus) or set SWITCHYARD_PROMETHEUS")

// FindPrometheus returns the path of the prometheus server.
func FindPrometheus() (string, error) {
	if p := os.Getenv("SWITCHYARD_PROMETHEUS"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("prometheus"); err == nil {
		return p, nil
	}
	return "", ErrNoPrometheus
}

// Prometheus is a Prometheus server scraping a stack.
type Prometheus struct {
	URL string // http://host:port
}

// ScrapeConfig returns the shipped scrape configuration (root's
// deploy/prometheus/prometheus.yml) pointed at the stack: each job's
// targets become the stack's addresses for it, scraped every second, and
// its rule files are the shipped ones. A job
// the stack has no address for is an error, so the shipped file and the
// stack stay in step.
func (s *Stack) ScrapeConfig(root string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(root, "deploy", "prometheus", "prometheus.yml"))
	if err != nil {
		return nil, err
	}
	var c map[string]any
	if err := yaml.Unmarshal(b, &c); err != nil {
		return nil, err
	}
	targets := map[string][]string{"xds": {hostPort(s.XDS)}}
	for _, r := range s.Replicas {
		targets["envoy"] = append(targets["envoy"], hostPort(r.EnvoyAdmin))
		targets["extproc"] = append(targets["extproc"], hostPort(r.ExtProcMetrics))
	}
	c["global"] = map[string]any{"scrape_interval": "1s", "evaluation_interval": "1s"}
	if files, ok := c["rule_files"].([]any); ok { // relative to the shipped file, not to the copy
		for i, f := range files {
			if name, _ := f.(string); name != "" && !filepath.IsAbs(name) {
				files[i] = filepath.Join(root, "deploy", "prometheus", name)
			}
		}
	}
	jobs, _ := c["scrape_configs"].([]any)
	if len(jobs) == 0 {
		return nil, errors.New("deploy/prometheus/prometheus.yml has no scrape_configs")
	}
	for _, j := range jobs {
		job, _ := j.(map[string]any)
		name, _ := job["job_name"].(string)
		t, ok := targets[name]
		if !ok {
			return nil, fmt.Errorf("deploy/prometheus/prometheus.yml: job %q scrapes nothing the stack runs", name)
		}
		job["static_configs"] = []any{map[string]any{"targets": t}}
	}
	return yaml.Marshal(c)
}

func hostPort(u string) string {
	if p, err := url.Parse(u); err == nil && p.Host != "" {
		return p.Host
	}
	return u
}

// StartPrometheus runs Prometheus (the Debian package) against the stack
// with ScrapeConfig, its data and log in Dir, and waits until it is ready.
// Close stops it with the rest of the stack.
func (s *Stack) StartPrometheus(ctx context.Context, root string) (*Prometheus, error) {
	bin, err := FindPrometheus()
	if err != nil {
		return nil, err
	}
	cfg, err := s.ScrapeConfig(root)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(s.Dir, "prometheus.yml")
	if err := os.WriteFile(path, cfg, 0o644); err != nil {
		return nil, err
	}
	p := &Prometheus{URL: "http://" + addr(pick(0))}
	if err := s.start(Options{}, "prometheus", bin, "--config.file="+path,
		"--storage.tsdb.path="+filepath.Join(s.Dir, "prometheus-data"), "--web.listen-address="+hostPort(p.URL),
		"--log.level=warn"); err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, p.URL+"/-/ready", http.StatusOK); err != nil {
		return nil, s.failure("prometheus", err)
	}
	return p, nil
}

// Sample is one series of a query's result.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Query evaluates expr now and returns its series; a scalar is one sample
// without labels. A query Prometheus cannot parse or run is an error.
func (p *Prometheus) Query(ctx context.Context, expr string) ([]Sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/api/v1/query?query="+url.QueryEscape(expr), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var r struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
		Data      struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("prometheus answered %d: %.300s", resp.StatusCode, b)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("prometheus: %s: %s", r.ErrorType, r.Error)
	}
	switch r.Data.ResultType {
	case "vector":
		var v []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		if err := json.Unmarshal(r.Data.Result, &v); err != nil {
			return nil, err
		}
		out := make([]Sample, 0, len(v))
		for _, e := range v {
			f, err := sampleValue(e.Value)
			if err != nil {
				return nil, err
			}
			out = append(out, Sample{Labels: e.Metric, Value: f})
		}
		return out, nil
	case "scalar":
		var v [2]any
		if err := json.Unmarshal(r.Data.Result, &v); err != nil {
			return nil, err
		}
		f, err := sampleValue(v)
		return []Sample{{Value: f}}, err
	}
	return nil, fmt.Errorf("prometheus: result type %q", r.Data.ResultType)
}

func sampleValue(v [2]any) (float64, error) {
	s, _ := v[1].(string)
	return strconv.ParseFloat(strings.TrimSpace(s), 64)
}
