package policy

import "github.com/switchyard/switchyard/configs/yamlval"

// Spec is the policy as written in YAML, before validation. Field docs are
// the reference for operators; configs/README.md shows them in use.
type Spec struct {
	Gateway   *GatewaySpec   `yaml:"gateway"`
	Providers []ProviderSpec `yaml:"providers"`
	Models    []ModelSpec    `yaml:"models"`
	Routes    []RouteSpec    `yaml:"routes"`
	Tenants   []TenantSpec   `yaml:"tenants"`
	// Catalog adds models to the shipped catalog (configs/modelcatalog), or
	// replaces its entries by name.
	Catalog []CatalogSpec `yaml:"catalog"`
	// Aliases are names clients send that stand for another model.
	Aliases []AliasSpec `yaml:"aliases"`
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
	// Edge bounds client connections and provider clusters in Envoy;
	// unset keys keep their defaults ([DefaultEdge]).
	Edge *Edge `yaml:"edge"`
	// Health tunes the provider health monitor, circuit breakers and
	// progressive recovery; unset keys keep their defaults
	// (state/health/README.md).
	Health *HealthConfig `yaml:"health"`
	// Governor tunes the cost governor that steers a tenant towards cheap
	// models as its daily budget runs down.
	Governor *GovernorSpec `yaml:"governor"`
	// Ledger says where usage records are kept.
	Ledger *LedgerSpec `yaml:"ledger"`
	// Events publishes one event per finished request to a Redis Stream.
	Events *EventsSpec `yaml:"events"`
	// Audit configures the audit log.
	Audit *AuditSpec `yaml:"audit"`
	// RetiredModels is what a request for a model its vendor has retired
	// (the catalog's retired_on) gets: refuse (the default: an error
	// naming the successor), substitute (served by the successor) or
	// serve (sent as named: a provider, region or simulator that still
	// serves it).
	RetiredModels string `yaml:"retired_models"`
	// Tracing exports OpenTelemetry traces (tracing.go).
	Tracing *TracingSpec `yaml:"tracing"`
}

// GovernorSpec configures the cost governor. The daily budget is split
// into 24 hourly slots.
type GovernorSpec struct {
	// HighAt is the share of the current hour's slot spent from which
	// expensive models lose weight (default 0.8).
	HighAt *float64 `yaml:"high_at"`
	// CheapOnlyAt is the share from which only cheap models serve (0.95).
	CheapOnlyAt *float64 `yaml:"cheap_only_at"`
	// FloorUSD: below this much left of the daily budget only cheap models
	// serve (default 1).
	FloorUSD *float64 `yaml:"floor_usd"`
}

// LedgerSpec selects the usage ledger's database.
type LedgerSpec struct {
	// Driver is sqlite (the default, a file) or postgres.
	Driver string `yaml:"driver"`
	// Path is the SQLite file (default usage.db in ext_proc's working
	// directory; `make run` runs it in .run/).
	Path string `yaml:"path"`
	// DSN is where the PostgreSQL connection string is read from; it may
	// hold a password, so it is a secret reference.
	DSN           *SecretRef `yaml:"dsn"`
	BatchSize     int        `yaml:"batch_size"`
	FlushInterval Duration   `yaml:"flush_interval"`
	// Buffer bounds the records held while the database is unavailable.
	Buffer int `yaml:"buffer"`
}

// EventsSpec configures the events (state/events): one
// response.generated event per ledger row and one budget.threshold event
// per budget threshold crossed, on a Redis Stream of the shared store
// and, when set, to a webhook.
type EventsSpec struct {
	// Stream names the stream (default "usage"; the key is
	// "sy:{events}:<stream>").
	Stream string `yaml:"stream"`
	// MaxLen bounds the stream, approximately (XADD MAXLEN ~; default
	// 100000); 0 keeps the default.
	MaxLen int64 `yaml:"max_len"`
	// Webhook also posts every event to a URL.
	Webhook *WebhookSpec `yaml:"webhook"`
}

// WebhookSpec is where events are posted, and the secret their HMAC
// signature is made with.
type WebhookSpec struct {
	URL    string     `yaml:"url"`
	Secret *SecretRef `yaml:"secret"`
	// Timeout bounds one call (default 5s); a call that fails is retried
	// with backoff.
	Timeout Duration `yaml:"timeout"`
}

// AuditSpec configures the audit log.
type AuditSpec struct {
	// CapturePrompts records prompts (with secrets and PII masked) in the
	// audit log for every tenant; a tenant's own setting wins.
	CapturePrompts bool `yaml:"capture_prompts"`
}

// LocalRateLimitSpec is a token bucket refilled every second.
type LocalRateLimitSpec struct {
	RequestsPerSecond int `yaml:"requests_per_second"`
	Burst             int `yaml:"burst"`
	// PerClient is a bucket for each client credential (Authorization or
	// X-Api-Key), taken before the listener's, so that one client flooding
	// cannot drain the listener's bucket for the others. Unset: half the
	// listener's rate and burst, for up to 1,000 clients at once.
	PerClient *ClientRateLimitSpec `yaml:"per_client"`
}

// ClientRateLimitSpec is the token bucket of each client.
type ClientRateLimitSpec struct {
	RequestsPerSecond int `yaml:"requests_per_second"`
	Burst             int `yaml:"burst"`
	// MaxClients bounds the buckets Envoy keeps (least recently used go
	// first): each is keyed by a credential of up to the header size limit.
	MaxClients int `yaml:"max_clients"`
}

// ProviderSpec is one upstream LLM API.
type ProviderSpec struct {
	src  source
	Name string `yaml:"name"`
	// Kind selects the wire protocol: openai, azure_openai, openai_compatible,
	// anthropic or gemini.
	Kind    string `yaml:"kind"`
	BaseURL string `yaml:"base_url"`
	// Insecure allows an http:// base_url on a host other than loopback,
	// which sends the provider key and every prompt in clear.
	Insecure bool `yaml:"insecure"`
	// APIKey names where the key is read from; the key itself never appears
	// in the policy. APIKeys lists several keys used as a pool.
	APIKey  *SecretRef  `yaml:"api_key"`
	APIKeys []SecretRef `yaml:"api_keys"`
	// APIVersion is Azure OpenAI's api-version query parameter.
	APIVersion string `yaml:"api_version"`
	// Dialect names the server behind an openai_compatible provider (vllm,
	// ollama, mistral, deepseek, groq) to switch on its quirks.
	Dialect string `yaml:"dialect"`
	// ConnectTimeout bounds opening a connection to the provider (default
	// 5s, at most 1m).
	ConnectTimeout Duration `yaml:"connect_timeout"`
	// Connections tunes the provider's connection pool, circuit breakers
	// and HTTP version (connections.go).
	Connections *ConnectionsSpec `yaml:"connections"`
	// Limits are the provider's own rate limits, so the gateway routes
	// elsewhere rather than collecting 429s.
	Limits *ProviderLimitsSpec `yaml:"limits"`
	// Simulated marks a provider served by the simulator that `make run`
	// starts at base_url (providersim); `make run` reaches any other
	// provider at its real base URL.
	Simulated bool `yaml:"simulated"`
}

// ProviderLimitsSpec is a provider's rate limits.
type ProviderLimitsSpec struct {
	RequestsPerMinute int `yaml:"requests_per_minute"`
	TokensPerMinute   int `yaml:"tokens_per_minute"`
}

// SecretRef says where a secret is read from ([yamlval.SecretRef]).
type SecretRef = yamlval.SecretRef

// ModelSpec is one deployment of a model clients may name: a provider
// serving it. Several entries with one name are one model on several
// deployments (LiteLLM's model_list entries sharing a model_name): the
// first entry says what the model is (context window, output caps,
// capabilities, quality, fallbacks, balance), and each entry where it is
// served (provider, upstream name, price, weight, limits). A later entry
// may repeat a field of the first only with the same value.
type ModelSpec struct {
	src source
	// Name is what clients send as "model".
	Name string `yaml:"name"`
	// Match makes the entry a pattern instead ("claude-*", "openai/*"):
	// any name it matches is sent to Provider as named, priced from the
	// catalog when the catalog knows it, else by Unpriced.
	Match    string `yaml:"match"`
	Provider string `yaml:"provider"`
	// Catalog names the catalog entry this model is (default: the entry
	// called Name, if any); what the entry says fills every field left
	// unset here.
	Catalog string `yaml:"catalog"`
	// Unpriced is what a pattern does with a name the catalog does not
	// price: refuse (the default), worst_case (admit it at the pattern's
	// price_usd_per_mtok) or dearest (admit it at the highest price of
	// the catalog models the pattern matches).
	Unpriced string `yaml:"unpriced"`
	// Upstream is the provider's own model (or Azure deployment) name;
	// defaults to Name.
	Upstream string `yaml:"upstream"`
	// Weight is this deployment's share of the model's traffic under the
	// weighted balance (default 1); 0 makes it a standby, tried only
	// after the deployments with a weight.
	Weight *int `yaml:"weight"`
	// Limits are this deployment's own rate limits (an Azure deployment's
	// quota, say), on top of its provider's: a deployment at its limit is
	// skipped for the next one in the plan.
	Limits *ProviderLimitsSpec `yaml:"limits"`
	// Balance says how the model's requests are spread over its
	// deployments: weighted (the default: a draw by weight, degraded
	// deployments weighing less), least_in_flight (the deployment with the
	// fewest attempts under way on this replica first) or health (the
	// healthiest, then the fastest, first). Every deployment but the one
	// chosen follows in the plan before the model's fallbacks.
	Balance          string    `yaml:"balance"`
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
	RatesSpec `yaml:",inline"`
	// LongContext prices every token of a request whose prompt is above
	// its threshold (OpenAI above 272K input tokens, Claude Haiku 5.5
	// above 100K).
	LongContext *LongContextSpec `yaml:"long_context"`
}

// LongContextSpec is a price tier for long prompts, USD per million
// tokens.
type LongContextSpec struct {
	AboveInputTokens int `yaml:"above_input_tokens"`
	RatesSpec        `yaml:",inline"`
}

// RatesSpec is one price tier, USD per million tokens.
type RatesSpec struct {
	Input  float64 `yaml:"input"`
	Output float64 `yaml:"output"`
	// CachedInput is a prompt-cache read (default: input).
	CachedInput *float64 `yaml:"cached_input"`
	// CacheWrite is a prompt-cache write kept for the vendor's default
	// lifetime (Anthropic's 5 minutes, OpenAI's 30), default input;
	// CacheWrite1h one kept for an hour (Anthropic's ttl "1h"), default
	// CacheWrite.
	CacheWrite   *float64 `yaml:"cache_write"`
	CacheWrite1h *float64 `yaml:"cache_write_1h"`
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
	// AnswerTimeout bounds a whole non-streamed answer, every attempt
	// included (default 10m): a provider that drips its body byte by byte
	// resets the idle timeout forever. Streams are not bounded by it.
	AnswerTimeout Duration `yaml:"answer_timeout"`
	// StreamTimeout bounds a whole streamed answer (default: the route's
	// answer_timeout): a provider that sends an event now and then resets
	// the idle timeout forever.
	StreamTimeout Duration `yaml:"stream_timeout"`
	// Routing is how the router filter chooses models on this route.
	Routing *RoutingSpec `yaml:"routing"`
	// FitOutputToContext lowers a request's output cap, for each model
	// that may serve it, to what the model's context window leaves of the
	// prompt (min(window - prompt, output cap)), instead of refusing a
	// request whose prompt and cap do not fit together.
	FitOutputToContext bool `yaml:"fit_output_to_context"`
	// TagsFromMetadata takes the string members of the body's metadata as
	// the request's tags (chat completions, Responses; on Messages the
	// members besides user_id) and keeps them from the provider.
	TagsFromMetadata bool `yaml:"tags_from_metadata"`
	// Redact masks sensitive data in what the route's requests send a
	// provider (a tenant's own setting wins).
	Redact *RedactSpec `yaml:"redact"`
	// Hedge sends a second attempt to the plan's next target when the
	// first has not answered in time; the first answer wins (hedge.go).
	Hedge *HedgeSpec `yaml:"hedge"`
	// Hybrid fans a request for its model out to several models and keeps
	// one answer (hybrid.go).
	Hybrid *HybridSpec `yaml:"hybrid"`
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
	// Auto asks for an outcome instead of thresholds: the gateway
	// calibrates the complexity thresholds from the route's own traffic
	// so that the strong share is what was asked for.
	Auto *AutoSpec `yaml:"auto"`
	// Learn lets the router learn, per domain of traffic (a tenant's app
	// and its system prompt), how much quality the weak models lose, from
	// the verdicts on their answers (the judge's, the apps' feedback),
	// and shift each domain's complexity scores by it (state/priors).
	Learn *LearnSpec `yaml:"learn"`
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

// AutoSpec is what an auto-routed route wants kept; exactly one of
// StrongShareMax and QualityTarget is set.
type AutoSpec struct {
	// StrongShareMax is the largest share of auto-routed requests that may
	// go to the stronger models (the medium and complex levels).
	StrongShareMax float64 `yaml:"strong_share_max"`
	// QualityTarget is the share of all-strong quality to keep; the router
	// turns it into a strong share with the classifier's measured quality
	// curve (the worst public benchmark's).
	QualityTarget float64 `yaml:"quality_target"`
	// Window is the half-life of the score distribution the thresholds are
	// read from (default 1h).
	Window *Duration `yaml:"window"`
	// MinSamples is how many recent scores a route or tenant needs before
	// its own distribution is trusted (default 200); until then the
	// route's, and before that the shipped calibration, is used.
	MinSamples int `yaml:"min_samples"`
	// Adjust lets ratings of weak-model answers (POST /v1/feedback) move
	// the strong share within bounds; nil keeps it where it was asked.
	Adjust *AdjustSpec `yaml:"adjust"`
}

// LearnSpec tunes a route's learning of domain priors; every field has a
// default.
type LearnSpec struct {
	// HalfLife is how fast a domain's evidence fades (default 168h).
	HalfLife *Duration `yaml:"half_life"`
	// MaxDomains bounds the domains kept per tenant (default 10000); the
	// least recently seen go first.
	MaxDomains int `yaml:"max_domains"`
	// PriorWeight is how many verdicts the shipped calibration, every
	// domain's prior, is worth (default 16).
	PriorWeight float64 `yaml:"prior_weight"`
	// Explore is the most the learning may add to the route's strong
	// calls, as a share of them: the strong answers the judge buys to
	// grade a weak answer against (default 0.05; 0: the judge grades only
	// strong answers, against the weak model's).
	Explore *float64 `yaml:"explore"`
}

// AdjustSpec bounds how far feedback may move an auto route's strong
// share, and the quality its weak-model answers are held to.
type AdjustSpec struct {
	Min float64 `yaml:"min"`
	Max float64 `yaml:"max"`
	// QualityBar is the mean rating (0..1) weak-model answers should
	// reach; it defaults to the route's quality_target.
	QualityBar float64 `yaml:"quality_bar"`
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
	// Budget caps spend in USD per day and per month.
	Budget *BudgetSpec `yaml:"budget_usd"`
	// MaxCostPerRequestUSD refuses a request whose worst-case cost is
	// higher.
	MaxCostPerRequestUSD *float64 `yaml:"max_cost_per_request_usd"`
	// RateLimit limits the tenant's requests and tokens.
	RateLimit *RateLimitSpec `yaml:"rate_limit"`
	// OverBudget is what happens to a request its budget cannot cover:
	// refuse (the default) or downgrade (serve it from a cheaper capable
	// model when one fits).
	OverBudget string `yaml:"over_budget"`
	// Apps are the tenant's applications, which X-Switchyard-App may name.
	Apps []AppSpec `yaml:"apps"`
	// DefaultApp is the app a request of a key bound to none acts as when
	// it names none, so that an app's limits cannot be escaped by naming
	// no app.
	DefaultApp string `yaml:"default_app"`
	// Audit overrides the gateway's audit settings for this tenant.
	Audit *AuditSpec `yaml:"audit"`
	// TagBudgets cap the spend of the tenant's requests that carry a tag.
	TagBudgets []TagBudgetSpec `yaml:"tag_budgets"`
	// Redact masks sensitive data in what the tenant's requests send a
	// provider, on every model route, in place of the route's setting.
	Redact *RedactSpec `yaml:"redact"`
}

// AppSpec is one application of a tenant.
type AppSpec struct {
	Name      string         `yaml:"name"`
	Budget    *BudgetSpec    `yaml:"budget_usd"`
	RateLimit *RateLimitSpec `yaml:"rate_limit"`
}

// BudgetSpec is a spend cap in USD; an unset period has no cap.
type BudgetSpec struct {
	Daily   *float64 `yaml:"daily"`
	Monthly *float64 `yaml:"monthly"`
	// OnStoreOutage is open (serve, and record spend when the store is
	// back; the default) or closed (refuse while the store is unreachable).
	OnStoreOutage string `yaml:"on_store_outage"`
}

// RateLimitSpec limits requests and tokens. The token bucket follows
// Spring Cloud Gateway's Redis rate limiter: it holds at most
// burst_capacity requests and refills at replenish_rate per second.
type RateLimitSpec struct {
	ReplenishRate     float64 `yaml:"replenish_rate"`
	BurstCapacity     int     `yaml:"burst_capacity"`
	RequestsPerMinute int     `yaml:"requests_per_minute"`
	TokensPerMinute   int     `yaml:"tokens_per_minute"`
	// OnStoreOutage is open (the default: let requests through while the
	// store is unreachable) or closed.
	OnStoreOutage string `yaml:"on_store_outage"`
}

// TenantRoutingSpec is a tenant's override of the routing strategy.
type TenantRoutingSpec struct {
	Strategy string       `yaml:"strategy"`
	Weights  *WeightsSpec `yaml:"weights"`
}

// KeySpec is a virtual key, stored only as its SHA-256.
type KeySpec struct {
	Name string `yaml:"name"`
	// App binds the key to one app of its tenant.
	App string `yaml:"app"`
	// DefaultApp is the app the key's requests act as when they name none
	// (the tenant's default_app otherwise); unlike App, a request may name
	// another app of the tenant.
	DefaultApp string         `yaml:"default_app"`
	SHA256     string         `yaml:"sha256"`
	Models     []string       `yaml:"models"`
	RateLimit  *RateLimitSpec `yaml:"rate_limit"`
	Budget     *BudgetSpec    `yaml:"budget_usd"`
	// MaxCostPerRequestUSD refuses a request of this key whose worst-case
	// cost is higher (the tenant's cap applies too).
	MaxCostPerRequestUSD *float64 `yaml:"max_cost_per_request_usd"`
	// Tags are the key's requests' tags where a request sets none of
	// that key.
	Tags map[string]string `yaml:"tags"`
}
