package policy

import (
	"strconv"
	"time"
)

// ProbesSpec turns on a provider's capability probes (state/probe): every
// Interval, tiny requests to each probed model check the capabilities it
// claims (tools, vision, json, stream with usage), and a capability whose
// probe fails is routed around until it passes again. What they cost is
// bounded by DailyCapUSD, shared by every replica.
type ProbesSpec struct {
	// Interval is how often the provider's models are probed (default
	// 1h, from 1s to 24h).
	Interval Duration `yaml:"interval"`
	// Timeout bounds one probe request (default 30s or the interval if
	// shorter; at most the interval and 5m).
	Timeout Duration `yaml:"timeout"`
	// DailyCapUSD is the most the provider's probes may cost in a UTC
	// day; required. A probe that would pass it is not sent.
	DailyCapUSD float64 `yaml:"daily_cap_usd"`
	// MaxTokens caps each probe's answer (default 16, at most 1024).
	MaxTokens int `yaml:"max_tokens"`
	// Models lists the models probed on this provider (default: every
	// chat model it serves).
	Models []string `yaml:"models"`
}

// Probes are a provider's compiled capability probes.
type Probes struct {
	Interval       time.Duration
	Timeout        time.Duration
	DailyCapMicros int64
	MaxTokens      int
	// Models are the deployments on the provider that are probed.
	Models []*Model
}

// Bounds and defaults of the probes: an interval below a second would
// spend the day's cap in minutes, and a probe is a few tokens, so a long
// answer or a long wait means something else is wrong.
const (
	DefaultProbeInterval  = time.Hour
	DefaultProbeTimeout   = 30 * time.Second
	DefaultProbeMaxTokens = 16
	minProbeInterval      = time.Second
	maxProbeInterval      = 24 * time.Hour
	maxProbeTimeout       = 5 * time.Minute
	maxProbeTokens        = 1024
)

// probes compiles a provider's probe settings, nil when it has none or
// they are invalid; the models are resolved by probeModels once the
// models are compiled.
func (c *compiler) probes(src source, d string, s *ProbesSpec) *Probes {
	if s == nil {
		return nil
	}
	out := &Probes{Interval: time.Duration(s.Interval), Timeout: time.Duration(s.Timeout), MaxTokens: s.MaxTokens}
	ok := true
	if out.Interval == 0 {
		out.Interval = DefaultProbeInterval
	}
	if out.Interval < minProbeInterval || out.Interval > maxProbeInterval || out.Interval%time.Millisecond != 0 {
		c.at(src, d, "probes.interval", "must be whole milliseconds from %s to %s, got %s", minProbeInterval, maxProbeInterval, out.Interval)
		ok = false
	}
	if out.Timeout == 0 {
		out.Timeout = min(DefaultProbeTimeout, out.Interval)
	}
	if out.Timeout > out.Interval || out.Timeout > maxProbeTimeout {
		c.at(src, d, "probes.timeout", "must be at most the interval (%s) and %s, got %s", out.Interval, maxProbeTimeout, out.Timeout)
		ok = false
	}
	if s.DailyCapUSD == 0 {
		c.at(src, d, "probes", "daily_cap_usd is required: the most the provider's probes may cost in a UTC day")
		ok = false
	} else if micros, valid := c.usd(src, d, "probes.daily_cap_usd", s.DailyCapUSD, false); valid {
		out.DailyCapMicros = micros
	} else {
		ok = false
	}
	if out.MaxTokens == 0 {
		out.MaxTokens = DefaultProbeMaxTokens
	}
	if out.MaxTokens < 1 || out.MaxTokens > maxProbeTokens {
		c.at(src, d, "probes.max_tokens", "must be from 1 to %d, got %d", maxProbeTokens, out.MaxTokens)
		ok = false
	}
	if !ok {
		return nil
	}
	return out
}

// probeModels resolves each probing provider's models: the ones its
// probes name, each a chat model with a deployment on the provider, or
// by default every chat deployment on it.
func (c *compiler) probeModels(specs []ProviderSpec, p *Policy) {
	for i := range specs {
		s := &specs[i]
		prov := p.providers[s.Name]
		if prov == nil || prov.Probes == nil {
			continue
		}
		d := display("providers", i, s.Name)
		on := func(m *Model) *Model {
			for _, dep := range m.Deployments {
				if dep.Provider == prov && dep.Caps.Has(CapChat) {
					return dep
				}
			}
			return nil
		}
		for j, name := range s.Probes.Models {
			m := p.models[name]
			switch {
			case m == nil:
				c.at(s.src, d, "probes.models["+strconv.Itoa(j)+"]", "unknown model %q", name)
			case on(m) == nil:
				c.at(s.src, d, "probes.models["+strconv.Itoa(j)+"]", "model %q has no chat deployment on provider %q", name, s.Name)
			default:
				prov.Probes.Models = append(prov.Probes.Models, on(m))
			}
		}
		if len(s.Probes.Models) > 0 {
			continue
		}
		for _, m := range p.Models {
			if dep := on(m); dep != nil {
				prov.Probes.Models = append(prov.Probes.Models, dep)
			}
		}
		if len(prov.Probes.Models) == 0 {
			c.at(s.src, d, "probes", "provider %q serves no chat model to probe", s.Name)
		}
	}
}
