package health

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		change  func(*Config)
		wantErr string // substring; "" means valid
	}{
		{name: "defaults", change: func(*Config) {}},
		{name: "recovery off", change: func(c *Config) { c.Recovery = RecoveryConfig{} }},
		{name: "breaker trip conditions off", change: func(c *Config) { c.Breaker.ConsecutiveFailures, c.Breaker.FailureRatio = 0, 0 }},
		{name: "steps not ending at 1", change: func(c *Config) { c.Recovery.Steps = []float64{0.25, 0.5} }},
		{name: "zero window", change: func(c *Config) { c.Window = 0 }, wantErr: "window: 0s must be > 0"},
		{name: "no buckets", change: func(c *Config) { c.Buckets = 0 }, wantErr: "buckets: 0 is outside [1, 1000]"},
		{name: "buckets too short", change: func(c *Config) { c.Window = 5 * time.Millisecond }, wantErr: "makes buckets shorter than 1ms"},
		{name: "min samples", change: func(c *Config) { c.MinSamples = 0 }, wantErr: "min_samples: 0 must be >= 1"},
		{name: "error rate above 1", change: func(c *Config) { c.Unavailable.ErrorRate = 1.5 }, wantErr: "unavailable.error_rate: 1.5 is outside [0, 1]"},
		{name: "zero p99", change: func(c *Config) { c.Healthy.P99 = 0 }, wantErr: "healthy.p99: 0s must be > 0"},
		{name: "negative quota", change: func(c *Config) { c.Unavailable.Quota = -0.1 }, wantErr: "unavailable.quota: -0.1 is outside [0, 1]"},
		{name: "healthy error rate above unavailable", change: func(c *Config) { c.Healthy.ErrorRate = 0.2 }, wantErr: "healthy.error_rate: 0.2 is above unavailable.error_rate 0.15"},
		{name: "negative unavailable_for", change: func(c *Config) { c.UnavailableFor = -time.Second }, wantErr: "unavailable_for: -1s is outside [0, 24h]"},
		{name: "healthy p99 above unavailable", change: func(c *Config) { c.Healthy.P99 = 10 * time.Second }, wantErr: "healthy.p99: 10s is above unavailable.p99 6s"},
		{name: "healthy quota below unavailable", change: func(c *Config) { c.Healthy.Quota = 0.01 }, wantErr: "healthy.quota: 0.01 is below unavailable.quota 0.05"},
		{name: "degraded weight zero", change: func(c *Config) { c.DegradedWeight = 0 }, wantErr: "degraded_weight: 0 is outside (0, 1]"},
		{name: "negative consecutive failures", change: func(c *Config) { c.Breaker.ConsecutiveFailures = -1 }, wantErr: "breaker.consecutive_failures: -1 is negative"},
		{name: "failure ratio above 1", change: func(c *Config) { c.Breaker.FailureRatio = 2 }, wantErr: "breaker.failure_ratio: 2 is outside [0, 1]"},
		{name: "ratio without min requests", change: func(c *Config) { c.Breaker.MinRequests = 0 }, wantErr: "breaker.min_requests: 0 must be >= 1 when failure_ratio is set"},
		{name: "negative interval", change: func(c *Config) { c.Breaker.Interval = -time.Second }, wantErr: "breaker.interval: -1s is negative"},
		{name: "zero open timeout", change: func(c *Config) { c.Breaker.OpenTimeout = 0 }, wantErr: "breaker.open_timeout: 0s must be > 0"},
		{name: "no probes", change: func(c *Config) { c.Breaker.HalfOpenProbes = 0 }, wantErr: "breaker.half_open_probes: 0 must be >= 1"},
		{name: "zero probe timeout", change: func(c *Config) { c.Breaker.ProbeTimeout = 0 }, wantErr: "breaker.probe_timeout: 0s must be > 0"},
		{name: "step above 1", change: func(c *Config) { c.Recovery.Steps = []float64{0.5, 1.5} }, wantErr: "recovery.steps[1]: 1.5 is outside (0, 1]"},
		{name: "steps not increasing", change: func(c *Config) { c.Recovery.Steps = []float64{0.5, 0.5} }, wantErr: "recovery.steps[1]: 0.5 is not above the step before, 0.5"},
		{name: "zero stable period", change: func(c *Config) { c.Recovery.StablePeriod = 0 }, wantErr: "recovery.stable_period: 0s must be > 0"},
		{name: "negative max canary", change: func(c *Config) { c.Recovery.MaxCanary = -time.Minute }, wantErr: "recovery.max_canary: -1m0s is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.change(&c)
			err := c.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("Validate() = nil, want error containing %q", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("Validate() = %q, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestValidateReportsEveryError(t *testing.T) {
	c := DefaultConfig()
	c.Window, c.Breaker.HalfOpenProbes = 0, 0
	err := c.Validate()
	if err == nil {
		t.Fatal("Validate() = nil, want two errors")
	}
	for _, want := range []string{"window:", "breaker.half_open_probes:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %q, want it to mention %q", err, want)
		}
	}
}

func TestConfigYAML(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		want    func(*Config)
		wantErr string
	}{
		{
			name: "keys left out keep their defaults",
			yaml: "breaker:\n  open_timeout: 45s\nrecovery:\n  steps: [0.2, 1]\n  stable_period: 2m\n",
			want: func(c *Config) {
				c.Breaker.OpenTimeout = 45 * time.Second
				c.Recovery.Steps = []float64{0.2, 1}
				c.Recovery.StablePeriod = 2 * time.Minute
			},
		},
		{
			name: "every key",
			yaml: `window: 2m
buckets: 12
min_samples: 50
healthy: {error_rate: 0.02, p99: 2s, quota: 0.3}
unavailable: {error_rate: 0.1, p99: 8s, quota: 0.02}
unavailable_for: 2m
degraded_weight: 0.25
warm_backup: false
breaker: {consecutive_failures: 3, failure_ratio: 0.4, min_requests: 10, interval: 30s, open_timeout: 10s, half_open_probes: 2, probe_timeout: 20s}
recovery: {steps: [0.05, 0.25, 1], stable_period: 1m, max_canary: 10m}
active_checks: {interval: 30s, timeout: 2s}
`,
			want: func(c *Config) {
				*c = Config{
					Window: 2 * time.Minute, Buckets: 12, MinSamples: 50,
					Healthy:        Limits{ErrorRate: 0.02, P99: 2 * time.Second, Quota: 0.3},
					Unavailable:    Limits{ErrorRate: 0.1, P99: 8 * time.Second, Quota: 0.02},
					UnavailableFor: 2 * time.Minute,
					DegradedWeight: 0.25,
					Breaker: BreakerConfig{ConsecutiveFailures: 3, FailureRatio: 0.4, MinRequests: 10, Interval: 30 * time.Second,
						OpenTimeout: 10 * time.Second, HalfOpenProbes: 2, ProbeTimeout: 20 * time.Second},
					Recovery: RecoveryConfig{Steps: []float64{0.05, 0.25, 1}, StablePeriod: time.Minute, MaxCanary: 10 * time.Minute},
					Checks:   CheckConfig{Interval: 30 * time.Second, Timeout: 2 * time.Second},
				}
			},
		},
		{name: "unknown key", yaml: "breaker:\n  open_for: 30s\n", wantErr: "field open_for not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DefaultConfig()
			dec := yaml.NewDecoder(bytes.NewBufferString(tt.yaml))
			dec.KnownFields(true)
			err := dec.Decode(&got)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Decode() = %v, want error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode() = %v", err)
			}
			want := DefaultConfig()
			tt.want(&want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("decoded config (-want +got):\n%s", diff)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("Validate() = %v, want nil", err)
			}
		})
	}
}

// TestReadmeConfig keeps the README's YAML block true: it must decode
// strictly and spell out exactly the defaults.
func TestReadmeConfig(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "```yaml\n")
	block, _, closed := strings.Cut(block, "```")
	if !ok || !closed {
		t.Fatal("README.md has no ```yaml block")
	}
	var got Config
	dec := yaml.NewDecoder(strings.NewReader(block))
	dec.KnownFields(true)
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("README config: %v", err)
	}
	if diff := cmp.Diff(DefaultConfig(), got); diff != "" {
		t.Errorf("README config differs from DefaultConfig (-want +got):\n%s", diff)
	}
}
