package policy

import (
	"net/url"
	"strconv"
	"strings"
	"time"
)

// provider compiles one entry of the providers section.
func (c *compiler) provider(s *ProviderSpec, i int, seen map[string]*Provider) *Provider {
	d := display("providers", i, s.Name)
	ok := c.newName(s.src, d, "provider", s.Name, seen[s.Name] != nil)
	if ok && s.Name == AllProviders {
		c.at(s.src, d, "name", "%q is reserved: fault drills use it for every provider", s.Name)
		ok = false
	}
	if ok && s.Name == CacheProvider {
		c.at(s.src, d, "name", "%q is reserved: the ledger names the response cache so", s.Name)
		ok = false
	}
	kind, known := kinds[s.Kind]
	if !known {
		c.at(s.src, d, "kind", "must be one of openai, azure_openai, openai_compatible, anthropic, gemini; got %q", s.Kind)
		ok = false
	}
	p := &Provider{Name: s.Name, Kind: kind, APIVersion: s.APIVersion, Cluster: "provider_" + s.Name, Simulated: s.Simulated}
	u, err := url.Parse(s.BaseURL)
	switch {
	case s.BaseURL == "":
		c.at(s.src, d, "base_url", "is required")
		ok = false
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.RawQuery != "" || u.User != nil:
		c.at(s.src, d, "base_url", "must be an http(s) URL without query or credentials, got %q", s.BaseURL)
		ok = false
	case u.Scheme == "http" && !loopback(u.Hostname()) && !s.Insecure:
		c.at(s.src, d, "base_url", "http:// to %s would send the provider key and prompts in clear; use https, or set insecure: true on the provider", u.Hostname())
		ok = false
	default:
		p.Scheme, p.Host, p.TLS = u.Scheme, u.Hostname(), u.Scheme == "https"
		p.BasePath = strings.TrimSuffix(u.Path, "/")
		p.Port = 80
		if p.TLS {
			p.Port = 443
		}
		if u.Port() != "" {
			p.Port, _ = strconv.Atoi(u.Port())
		}
	}
	if kind == KindAzureOpenAI && s.APIVersion == "" {
		c.at(s.src, d, "api_version", "is required for azure_openai")
		ok = false
	}
	if s.Dialect != "" && kind != KindOpenAICompatible {
		c.at(s.src, d, "dialect", "only applies to openai_compatible")
		ok = false
	} else if s.Dialect != "" && !dialects[s.Dialect] {
		c.at(s.src, d, "dialect", "must be one of deepseek, groq, mistral, ollama, vllm; got %q", s.Dialect)
		ok = false
	}
	p.Dialect = s.Dialect
	if l := s.Limits; l != nil {
		if l.RequestsPerMinute < 0 || l.TokensPerMinute < 0 {
			c.at(s.src, d, "limits", "requests_per_minute and tokens_per_minute must be >= 0")
			ok = false
		}
		p.RequestsPerMinute, p.TokensPerMinute = l.RequestsPerMinute, l.TokensPerMinute
	}
	if kind != KindAzureOpenAI && s.APIVersion != "" {
		c.at(s.src, d, "api_version", "only applies to azure_openai")
		ok = false
	}
	if s.APIKey != nil && len(s.APIKeys) > 0 {
		c.at(s.src, d, "api_keys", "set api_key or api_keys, not both")
		ok = false
	}
	refs := s.APIKeys
	field := "api_keys"
	if s.APIKey != nil {
		refs, field = []SecretRef{*s.APIKey}, "api_key"
	}
	for j, r := range refs {
		if (r.Env == "") == (r.File == "") {
			f := field
			if field == "api_keys" {
				f += "[" + strconv.Itoa(j) + "]"
			}
			c.at(s.src, d, f, "must set exactly one of env or file")
			ok = false
		}
	}
	p.Keys = refs
	p.ConnectTimeout = time.Duration(s.ConnectTimeout)
	if p.ConnectTimeout == 0 {
		p.ConnectTimeout = DefaultConnectTimeout
	}
	var connOK bool
	if p.Connections, connOK = c.connections(s.src, d, s.Connections, p.ConnectTimeout); !connOK {
		ok = false
	}
	if !ok {
		return nil
	}
	return p
}
