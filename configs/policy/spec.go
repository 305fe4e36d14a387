package policy

import "github.com/switchyard/switchyard/filters/router/health"

// Spec is the policy as written in YAML, before validation. Field docs are
// the reference for operators; configs/README.md shows them in use.
type Spec struct {
	Gateway   *GatewaySpec   `yaml:"gateway"`
	Providers []ProviderSpec `yaml:"providers"`
	Models    []ModelSpec    `yaml:"models"`
	Routes    []RouteSpec    `yaml:"routes"`
	Tenants   []TenantSpec   `yaml:"tenants"`
}

// GatewaySpec holds process-wide settings.
type GatewaySpec struct {
	// Listen is the address Envoy serves clients on, host:port.
	Listen string `yaml:"listen"`
	// AdminKeySHA256 is the hex SHA-256 of the admin API key.
	AdminKeySHA256 string `yaml:"admin_key_sha256"`
	// MaxRequestBytes bounds request bodies ("10MiB"); larger ones get 413.
	MaxRequestBytes ByteSize `yaml:"max_request_bytes"`
	// LocalRateLimit is Envoy's token bucket on the listener: cheap overload
	// protection in front of everything else.
	LocalRateLimit *LocalRateLimitSpec `yaml:"local_rate_limit"`
	// Health tunes the provider health monitor, circuit breakers and
	// progressive recovery; unset keys keep their defaults
	// (filters/router/health/README.md).
	Health *health.Config `yaml:"health"`
}

// LocalRateLimitSpec is a token bucket refilled every second.
type LocalRateLimitSpec struct {
	RequestsPerSecond int `yaml:"requests_per_second"`
	Burst             int `yaml:"burst"`
}

// ProviderSpec is one upstream LLM API.
type ProviderSpec struct {
	src  source
	Name string `yaml:"name"`
	// Kind selects the wire protocol: openai, azure_openai, openai_compatible,
	// anthropic or gemini.
	Kind    string `yaml:"kind"`
	BaseURL string `yaml:"base_url"`
	// APIKey names where the key is read from; the key itself never appears
	// in the policy. APIKeys lists several keys used as a pool.
	APIKey  *SecretRef  `yaml:"api_key"`
	APIKeys []SecretRef `yaml:"api_keys"`
	// APIVersion is Azure OpenAI's api-version query parameter.
	APIVersion string `yaml:"api_version"`
	// Dialect names the server behind an openai_compatible provider (vllm,
	// ollama, mistral, deepseek, groq) to switch on its quirks.
	Dialect        string   `yaml:"dialect"`
	ConnectTimeout Duration `yaml:"connect_timeout"`
}

// SecretRef says where a secret is read from: an environment variable or a
// file. Exactly one is set.
type SecretRef struct {
	Env  string `yaml:"env"`
	File string `yaml:"file"`
}

// ModelSpec is one model clients may name.
type ModelSpec struct {
	src source
	// Name is what clients send as "model".
	Name     string `yaml:"name"`
	Provider string `yaml:"provider"`
	// Upstream is the provider's own model (or Azure deployment) name;
	// defaults to Name.
	Upstream         string    `yaml:"upstream"`
	ContextWindow    int       `yaml:"context_window"`
	MaxOutputTokens  int       `yaml:"max_output_tokens"`
	DefaultMaxTokens int       `yaml:"default_max_tokens"`
	Capabilities     []string  `yaml:"capabilities"`
	Price            PriceSpec `yaml:"price_usd_per_mtok"`
	// Quality is the model's relative answer quality, 0..1 (default 0.5),
	// used by the quality-first, weighted and cost-optimized strategies.
	Quality *float64 `yaml:"quality"`
	// Cheap marks the models a tenant near its budget may still use.
	Cheap bool `yaml:"cheap"`
	// SelfHosted marks models that may serve requests holding sensitive
	// data (PII, secrets).
	SelfHosted bool `yaml:"self_hosted"`
	// Fallback lists the models tried, in order, when this one fails; the
	// route's fallback applies when it is empty.
	Fallback []string `yaml:"fallback"`
}

// PriceSpec is USD per million tokens.
type PriceSpec struct {
	Input       float64  `yaml:"input"`
	Output      float64  `yaml:"output"`
	CachedInput *float64 `yaml:"cached_input"`
}

// RouteSpec binds a client-facing path to an API and a filter list.
type RouteSpec struct {
	src  source
	Name string `yaml:"name"`
	Path string `yaml:"path"`
	// API is what the path serves: chat_completions, embeddings or models.
	API string `yaml:"api"`
	// Filters chooses which filters run and their arguments; the order is
	// fixed by the filter registry, never by this list.
	Filters []FilterSpec `yaml:"filters"`
	// Attempts bounds how many providers one request may try (default 3).
	Attempts int `yaml:"attempts"`
	// PerTryIdleTimeout fails an attempt over when its provider sends nothing
	// for this long before the first byte (default 60s).
	PerTryIdleTimeout Duration `yaml:"per_try_idle_timeout"`
	// Routing is how the router filter chooses models on this route.
	Routing *RoutingSpec `yaml:"routing"`
}

// RoutingSpec configures model choice on a route.
type RoutingSpec struct {
	// Strategy ranks candidate models: cost-optimized (default),
	// quality-first, latency-first or weighted.
	Strategy string `yaml:"strategy"`
	// AutoModel is the model name by which a client asks the router to
	// choose (default "auto").
	AutoModel string `yaml:"auto_model"`
	// AllowOverride lets rules replace a model the client named.
	AllowOverride bool `yaml:"allow_override"`
	// Fallback lists the models tried after the chosen one, in order.
	Fallback []string `yaml:"fallback"`
	// Weights of the weighted strategy.
	Weights *WeightsSpec `yaml:"weights"`
	// Complexity sets the score thresholds of the simple/medium/complex
	// levels (quantiles: complex_at 0.7 sends about the hardest 30% of
	// typical traffic to the strong model).
	Complexity *ComplexitySpec `yaml:"complexity"`
	// Rules are tried in order before the strategy; the first that matches
	// restricts the candidates to its route_to models.
	Rules []RuleSpec `yaml:"rules"`
	// Tiers maps a tenant tier to the models it prefers (flagships for paid
	// tiers).
	Tiers map[string][]string `yaml:"tiers"`
	// Split sends a share of auto-routed traffic to a candidate model, sticky
	// per user, for A/B tests.
	Split *SplitSpec `yaml:"split"`
	// Stickiness keeps an end user on the model that served them for this
	// long (default 5m; 0s turns it off).
	Stickiness *Duration `yaml:"stickiness"`
}

// WeightsSpec weighs the terms of the weighted strategy; they need not sum
// to 1.
type WeightsSpec struct {
	Cost        float64 `yaml:"cost"`
	Latency     float64 `yaml:"latency"`
	Quality     float64 `yaml:"quality"`
	Health      float64 `yaml:"health"`
	Match       float64 `yaml:"match"`
	Consistency float64 `yaml:"consistency"`
}

// ComplexitySpec holds the complexity level thresholds.
type ComplexitySpec struct {
	MediumAt  float64 `yaml:"medium_at"`
	ComplexAt float64 `yaml:"complex_at"`
}

// RuleSpec sends requests matching When to the RouteTo models.
type RuleSpec struct {
	Name    string   `yaml:"name"`
	When    WhenSpec `yaml:"when"`
	RouteTo []string `yaml:"route_to"`
}

// WhenSpec is a rule's condition; every field set must match.
type WhenSpec struct {
	Complexity      []string          `yaml:"complexity"`
	TokenCountAbove int               `yaml:"token_count_above"`
	RequiresTool    bool              `yaml:"requires_tool"`
	RequiresVision  bool              `yaml:"requires_vision"`
	Topic           []string          `yaml:"topic"`
	Language        []string          `yaml:"language"`
	Sensitive       bool              `yaml:"sensitive"`
	Header          map[string]string `yaml:"header"`
	Metadata        map[string]string `yaml:"metadata"`
}

// SplitSpec sends Percent of eligible traffic to Model.
type SplitSpec struct {
	Model   string `yaml:"model"`
	Percent int    `yaml:"percent"`
}

// FilterSpec is one filter of a route, written either as a shorthand string
// ("router=cheapest") or as {name, args}.
type FilterSpec struct {
	Name      string
	Shorthand []string
	Args      map[string]any
	line, col int
}

// TenantSpec is a customer of the gateway.
type TenantSpec struct {
	src    source
	Name   string    `yaml:"name"`
	Tier   string    `yaml:"tier"`
	Models []string  `yaml:"models"`
	Keys   []KeySpec `yaml:"keys"`
	// Routing overrides the route's strategy and weights for this tenant.
	Routing *TenantRoutingSpec `yaml:"routing"`
}

// TenantRoutingSpec is a tenant's override of the routing strategy.
type TenantRoutingSpec struct {
	Strategy string       `yaml:"strategy"`
	Weights  *WeightsSpec `yaml:"weights"`
}

// KeySpec is a virtual key, stored only as its SHA-256.
type KeySpec struct {
	Name   string   `yaml:"name"`
	App    string   `yaml:"app"`
	SHA256 string   `yaml:"sha256"`
	Models []string `yaml:"models"`
}
