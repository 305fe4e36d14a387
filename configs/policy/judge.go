package policy

import (
	"fmt"
	"net/url"
	"strconv"
)

// JudgeArgs are the judge filter's arguments on a route: which answers of
// its auto routing are graded, by which model, and at whose cost.
type JudgeArgs struct {
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
	APIKey SecretRef
	// GatewayURL is where those calls go; empty is the policy's listener
	// on the loopback address.
	GatewayURL string
}

// Judge defaults.
const (
	DefaultJudgeSample       = 0.05
	DefaultJudgeMaxPerMinute = 10
)

type judgeArgsSpec struct {
	Model        string     `yaml:"model"`
	Reference    string     `yaml:"reference"`
	Weak         string     `yaml:"weak"`
	Sample       *float64   `yaml:"sample"`
	MaxPerMinute *int       `yaml:"max_per_minute"`
	APIKey       *SecretRef `yaml:"api_key"`
	GatewayURL   string     `yaml:"gateway_url"`
}

// ParseJudgeArgs decodes a judge entry's arguments strictly over the
// defaults. That the models exist is checked with the policy
// (judgeScopes).
func ParseJudgeArgs(ref FilterRef) (JudgeArgs, error) {
	a := JudgeArgs{Sample: DefaultJudgeSample, MaxPerMinute: DefaultJudgeMaxPerMinute}
	if len(ref.Shorthand) > 0 {
		return a, fmt.Errorf("filter judge takes no shorthand arguments; use {name: judge, args: {model: ..., api_key: {env: ...}}}")
	}
	var s judgeArgsSpec
	if err := decodeArgs(ref, "model, reference, weak, sample, max_per_minute, api_key, gateway_url", &s); err != nil {
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

// judgeScopes checks what ParseJudgeArgs cannot see alone: the judge
// grades chat completions, and its models are chat models of the policy.
func (c *compiler) judgeScopes(routes []RouteSpec, p *Policy) {
	c.chatEntries(routes, "judge", "grades", func(s *RouteSpec, d, field string, ref FilterRef) {
		args, err := ParseJudgeArgs(ref)
		if err != nil {
			return // reported with the route
		}
		for _, m := range []struct{ field, name string }{{"model", args.Model}, {"reference", args.Reference}, {"weak", args.Weak}} {
			if m.name == "" {
				continue
			}
			if model := p.models[m.name]; model == nil || !model.Caps.Has(CapChat) {
				c.at(s.src, d, field, "judge args: %s names no chat model of the policy (got %q)", m.field, m.name)
			}
		}
	})
}
