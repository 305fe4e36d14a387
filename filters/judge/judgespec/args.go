package judgespec

import (
	"fmt"
	"net/url"
	"strconv"

	"github.com/switchyard/switchyard/configs/yamlval"
	"github.com/switchyard/switchyard/filters/filterspec"
)

// Args are the judge filter's arguments on a route: which answers of
// its auto routing are graded, by which model, and at whose cost.
type Args struct {
	// Model grades: it reads the conversation, the reference answer and
	// the weaker model's answer, and rates the latter.
	Model string
	// Reference answers each graded conversation again; empty is the
	// strongest chat model of the policy (by quality, then price), the
	// model auto routing saves the cost of.
	Reference string
	// Weak answers again, on a route that learns domain priors, each
	// graded request the strong reference served, so that its answer
	// is graded against the reference's; empty is the cheapest chat
	// model of the policy, the one auto routing sends simple requests.
	Weak string
	// Sample is the share of eligible answers graded, (0, 1].
	Sample float64
	// MaxPerMinute bounds the answers each replica grades a minute, so the
	// judge's spend is bounded whatever the traffic.
	MaxPerMinute int
	// APIKey is the virtual key the judge's calls go through the gateway
	// with: its tenant's limits and budget bound them and its ledger rows
	// record them. Resolved by ext_proc, never logged.
	APIKey yamlval.SecretRef
	// GatewayURL is where those calls go; empty is the policy's listener
	// on the loopback address.
	GatewayURL string
}

// Defaults.
const (
	DefaultSample       = 0.05
	DefaultMaxPerMinute = 10
)

type argsSpec struct {
	Model        string             `yaml:"model"`
	Reference    string             `yaml:"reference"`
	Weak         string             `yaml:"weak"`
	Sample       *float64           `yaml:"sample"`
	MaxPerMinute *int               `yaml:"max_per_minute"`
	APIKey       *yamlval.SecretRef `yaml:"api_key"`
	GatewayURL   string             `yaml:"gateway_url"`
}

// Parse decodes a judge entry's arguments strictly over the
// defaults. That the models exist is checked with the policy
// (configs/policy).
func Parse(ref filterspec.Ref) (Args, error) {
	a := Args{Sample: DefaultSample, MaxPerMinute: DefaultMaxPerMinute}
	if len(ref.Shorthand) > 0 {
		return a, fmt.Errorf("filter judge takes no shorthand arguments; use {name: judge, args: {model: ..., api_key: {env: ...}}}")
	}
	var s argsSpec
	if err := filterspec.DecodeArgs(ref, "model, reference, weak, sample, max_per_minute, api_key, gateway_url", &s); err != nil {
		return a, err
	}
	a.Model, a.Reference, a.Weak, a.GatewayURL = s.Model, s.Reference, s.Weak, s.GatewayURL
	if s.Sample != nil {
		a.Sample = *s.Sample
	}
	if s.MaxPerMinute != nil {
		a.MaxPerMinute = *s.MaxPerMinute
	}
	if s.APIKey != nil {
		a.APIKey = *s.APIKey
	}
	switch {
	case a.Model == "":
		return a, fmt.Errorf("judge args: model is required (the model that grades)")
	case !(a.Sample > 0 && a.Sample <= 1):
		return a, fmt.Errorf("judge args: sample must be above 0 and at most 1; got %s", strconv.FormatFloat(a.Sample, 'g', -1, 64))
	case a.MaxPerMinute < 1 || a.MaxPerMinute > 600:
		return a, fmt.Errorf("judge args: max_per_minute must be between 1 and 600; got %d", a.MaxPerMinute)
	case (a.APIKey.Env == "") == (a.APIKey.File == ""):
		return a, fmt.Errorf("judge args: api_key must set exactly one of env or file (the virtual key the judge's calls use)")
	}
	if a.GatewayURL != "" {
		u, err := url.Parse(a.GatewayURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return a, fmt.Errorf("judge args: gateway_url must be an http or https URL with a host and no path; got %q", a.GatewayURL)
		}
	}
	return a, nil
}
