package policy

import (
	"net"
	"strconv"
	"time"

	"github.com/switchyard/switchyard/filters/filterspec"
)

// Kind is a provider's wire protocol.
type Kind string

// The provider kinds Switchyard can translate to.
const (
	KindOpenAI           Kind = "openai"
	KindAzureOpenAI      Kind = "azure_openai"
	KindOpenAICompatible Kind = "openai_compatible"
	KindAnthropic        Kind = "anthropic"
	KindGemini           Kind = "gemini"
)

var kinds = map[string]Kind{
	"openai": KindOpenAI, "azure_openai": KindAzureOpenAI, "openai_compatible": KindOpenAICompatible,
	"anthropic": KindAnthropic, "gemini": KindGemini,
}

// API is what a route serves.
type API string

// The client-facing APIs.
const (
	APIChatCompletions API = "chat_completions"
	APIEmbeddings      API = "embeddings"
	APIModels          API = "models"
	APIAdmin           API = "admin"
	// APIUsage serves a tenant its own usage, read from the ledger.
	APIUsage API = "usage"
	// APIFeedback takes a tenant's ratings of its answers.
	APIFeedback API = "feedback"
	// APIMessages is Anthropic's Messages API (/v1/messages), served by
	// every provider kind.
	APIMessages API = "messages"
	// APICountTokens is Anthropic's /v1/messages/count_tokens.
	APICountTokens API = "count_tokens"
	// APIResponses is OpenAI's Responses API (/v1/responses), stateless
	// subset, served by every provider kind.
	APIResponses API = "responses"
	// APIConsole is the operator's console, web pages for a browser.
	APIConsole API = "console"
)

var apis = map[string]API{
	"chat_completions": APIChatCompletions, "embeddings": APIEmbeddings, "models": APIModels, "admin": APIAdmin, "usage": APIUsage,
	"feedback": APIFeedback,
	"messages": APIMessages, "count_tokens": APICountTokens, "responses": APIResponses,
	"console": APIConsole,
}

// Models reports whether a route of this API reaches a model (and so a
// provider): its requests are priced, the others cost a request of the
// caller's rate limits at most.
func (a API) Models() bool {
	switch a {
	case APIChatCompletions, APIEmbeddings, APIMessages, APICountTokens, APIResponses:
		return true
	}
	return false
}

// Writes reports whether a route of this API has a model write an
// answer (chat completions, Messages, Responses), which an output cap
// bounds.
func (a API) Writes() bool {
	return a == APIChatCompletions || a == APIMessages || a == APIResponses
}

// Prefix reports whether a route of this API also serves the paths below
// its own (GET /v1/models/{model}, /admin/...).
func (a API) Prefix() bool {
	return a == APIModels || a == APIAdmin || a == APIUsage || a == APIConsole
}

// Capability is a bit set of what a model can do.
type Capability uint16

// Model capabilities, as named in YAML.
const (
	CapChat Capability = 1 << iota
	CapTools
	CapVision
	CapJSON
	CapStream
	CapEmbeddings
)

var capabilities = map[string]Capability{
	"chat": CapChat, "tools": CapTools, "vision": CapVision, "json": CapJSON, "stream": CapStream, "embeddings": CapEmbeddings,
}

// Has reports whether c includes every capability of want.
func (c Capability) Has(want Capability) bool { return c&want == want }

// Policy is a validated, compiled policy. It is immutable: readers share it
// without locks and a reload swaps in a new one.
type Policy struct {
	// Version identifies the content (a hash of every file), so both the
	// control plane and ext_proc can say which policy they serve.
	Version   string
	Gateway   Gateway
	Providers []*Provider
	// Models has one entry per model name, its first deployment.
	Models  []*Model
	Routes  []*Route
	Tenants []*Tenant

	// Patterns are the policy's model patterns, in policy order: the
	// first that matches a name decides.
	Patterns []*Pattern
	// Catalog is every catalog entry, the shipped ones and the policy's.
	Catalog map[string]*CatalogEntry

	providers map[string]*Provider
	models    map[string]*Model
	keys      map[[32]byte]*Key
	// aliases maps an alias to the name it finally stands for (a model,
	// a name a pattern admits, or AliasAuto).
	aliases map[string]string
	// lifecycle lists where the policy names catalog models, for the
	// lifecycle warnings.
	lifecycle []lifecycleUse
}

// Gateway is the compiled gateway section.
type Gateway struct {
	ListenHost      string
	ListenPort      int
	AdminKeyHash    [32]byte
	HasAdminKey     bool
	MaxRequestBytes int64
	LocalRateLimit  LocalRateLimit
	Edge            Edge
	Health          HealthConfig
	Governor        Governor
	Ledger          Ledger
	// Events is nil when usage events are off.
	Events         *Events
	CapturePrompts bool
	// RetiredModels is what requests for a retired model get.
	RetiredModels Retired
	// Tracing is nil when traces are off.
	Tracing *Tracing
}

// Retired is what a request for a model past its retired_on gets.
type Retired string

// The answers to a retired model.
const (
	RetiredRefuse     Retired = "refuse"
	RetiredSubstitute Retired = "substitute"
	RetiredServe      Retired = "serve"
)

var retiredModes = map[string]Retired{"refuse": RetiredRefuse, "substitute": RetiredSubstitute, "serve": RetiredServe}

// Events is the compiled events configuration.
type Events struct {
	Stream string
	MaxLen int64
	// Webhook is nil when events go to the stream only.
	Webhook *Webhook
}

// Webhook is the compiled events webhook.
type Webhook struct {
	URL     string
	Secret  SecretRef
	Timeout time.Duration
}

// Governor is the compiled cost governor.
type Governor struct {
	HighAt, CheapOnlyAt float64
	FloorMicros         int64
}

// Ledger is the compiled ledger selection.
type Ledger struct {
	Driver        string // sqlite or postgres
	Path          string
	DSN           *SecretRef
	BatchSize     int
	FlushInterval time.Duration
	Buffer        int
}

// Budget is a compiled spend cap in micro-USD; 0 means no cap.
type Budget struct {
	DailyMicros   int64
	MonthlyMicros int64
	FailOpen      bool
}

// Set reports whether the budget caps anything.
func (b Budget) Set() bool { return b.DailyMicros > 0 || b.MonthlyMicros > 0 }

// RateLimit is a compiled rate limit; zero fields are off.
type RateLimit struct {
	ReplenishRate     float64
	BurstCapacity     int
	RequestsPerMinute int
	TokensPerMinute   int
	FailOpen          bool
}

// Set reports whether the limit limits anything.
func (r RateLimit) Set() bool {
	return r.ReplenishRate > 0 || r.RequestsPerMinute > 0 || r.TokensPerMinute > 0
}

// App is a tenant's application.
type App struct {
	Name      string
	Budget    Budget
	RateLimit RateLimit
}

// LocalRateLimit is Envoy's listener token bucket, after a bucket per
// client; zero means off.
type LocalRateLimit struct {
	RequestsPerSecond int
	Burst             int
	PerClient         ClientRateLimit
}

// ClientRateLimit is the compiled bucket of each client credential.
type ClientRateLimit struct {
	RequestsPerSecond int
	Burst             int
	MaxClients        int
}

// Provider is a compiled provider.
type Provider struct {
	Name string
	Kind Kind
	// Scheme, Host, Port and BasePath come from base_url.
	Scheme   string
	Host     string
	Port     int
	BasePath string
	TLS      bool
	// Keys lists where the provider's keys come from; ext_proc resolves them.
	Keys []SecretRef
	// Simulated: served by a simulator `make run` starts at base_url.
	Simulated  bool
	APIVersion string
	Dialect    string
	// RequestsPerMinute and TokensPerMinute are the provider's own limits;
	// 0 is unlimited.
	RequestsPerMinute int
	TokensPerMinute   int
	ConnectTimeout    time.Duration
	// Connections are the provider cluster's pool, bounds and protocol.
	Connections Connections
	// Cluster is the Envoy cluster that reaches this provider.
	Cluster string
}

// Price is micro-USD per million tokens, so prices stay integers.
type Price struct {
	InputPerMTok       int64
	OutputPerMTok      int64
	CachedInputPerMTok int64
	// CacheWritePerMTok is a prompt-cache write kept for the vendor's
	// default lifetime (Anthropic's 5 minutes, OpenAI's 30),
	// CacheWrite1hPerMTok one kept for an hour.
	CacheWritePerMTok   int64
	CacheWrite1hPerMTok int64
	// Long is the tier of a request whose prompt is above LongAbove
	// tokens, every token of it; zero LongAbove means one tier.
	LongAbove int
	Long      Rates
}

// Rates are one tier's micro-USD per million tokens.
type Rates struct {
	InputPerMTok, OutputPerMTok, CachedInputPerMTok int64
	CacheWritePerMTok, CacheWrite1hPerMTok          int64
}

// tier is the rates a request with this many prompt tokens is billed at.
func (p Price) tier(promptTokens int) Rates {
	if p.LongAbove > 0 && promptTokens > p.LongAbove {
		return p.Long
	}
	return Rates{p.InputPerMTok, p.OutputPerMTok, p.CachedInputPerMTok, p.CacheWritePerMTok, p.CacheWrite1hPerMTok}
}

// Tokens are the counts a request is billed by. CacheRead, CacheWrite and
// CacheWrite1h are parts of Prompt: the prompt tokens the provider read
// from its prompt cache, and those it wrote there for its default
// lifetime and for an hour.
type Tokens struct {
	Prompt, Completion                  int
	CacheRead, CacheWrite, CacheWrite1h int
}

// Micros is what a request costs at this price, in micro-USD: the prompt's
// cache writes and reads at their rates (together at most the whole
// prompt: an hour's writes count first, the reads last), the rest of it at
// the input rate, every token at the long tier's rates when the prompt is
// above its threshold, rounded half up.
func (p Price) Micros(t Tokens) int64 {
	r := p.tier(t.Prompt)
	left := int64(max(t.Prompt, 0))
	part := func(n int) int64 {
		k := min(int64(max(n, 0)), left)
		left -= k
		return k
	}
	nanoish := part(t.CacheWrite1h)*r.CacheWrite1hPerMTok + part(t.CacheWrite)*r.CacheWritePerMTok +
		part(t.CacheRead)*r.CachedInputPerMTok
	nanoish += left*r.InputPerMTok + int64(t.Completion)*r.OutputPerMTok
	return (nanoish + 500_000) / 1_000_000
}

// Ceiling is the most a request of about promptTokens (an estimate) and
// at most outputTokens may cost, in micro-USD rounded up: none of the
// prompt read from the provider's cache, all of it written there at the
// dearest rate when a write costs more than input (a Claude Code request
// marks its prompt for caching every time, and OpenAI's newer models
// write their cache unasked). The prompt is an estimate, so a request
// whose estimate is within a fifth of the long tier's threshold is
// reserved at that tier: the provider's own count may cross it.
func (p Price) Ceiling(promptTokens, outputTokens int) int64 {
	r := p.tier(promptTokens + promptTokens/4)
	in := max(r.InputPerMTok, r.CacheWritePerMTok, r.CacheWrite1hPerMTok)
	nano := int64(promptTokens)*in + int64(outputTokens)*r.OutputPerMTok
	return (nano + 999_999) / 1_000_000
}

// unknownToolUseMicros is what one use of a server tool costs on a model
// whose vendor's price for it the catalog does not know: a stated worst
// case above every per-use price the catalog lists ($35 per 1,000), so
// that no use goes uncharged.
const unknownToolUseMicros = 35_000

// ToolUseMicros is what one use of a tool the vendor runs (web_search)
// costs on m, in micro-USD.
func (m *Model) ToolUseMicros(tool string) int64 {
	if p, ok := m.ToolPrices[tool]; ok {
		return p
	}
	return unknownToolUseMicros
}

// PriceSource says where the price a model is charged at comes from; the
// ledger records it with every row.
type PriceSource string

// The price sources.
const (
	// PriceCatalog: the model's own price, from the catalog or its
	// policy entry.
	PriceCatalog PriceSource = "catalog"
	// PricePattern: a model the catalog does not know, served through a
	// pattern and charged at the pattern's stated worst case.
	PricePattern PriceSource = "pattern"
	// PriceEstimated: a model the catalog does not know, charged at the
	// highest price of the catalog models its pattern matches.
	PriceEstimated PriceSource = "estimated"
)

// Model is one deployment of a compiled model: the provider serving it,
// under its upstream name, at its price, within its limits, with the
// fields every deployment of the name shares (what clients see of the
// model). [Policy.Model] returns a model's first deployment, which stands
// for the model wherever a model is chosen; Deployments lists them all.
type Model struct {
	Name             string
	Upstream         string
	Provider         *Provider
	ContextWindow    int
	MaxOutputTokens  int
	DefaultMaxTokens int
	Caps             Capability
	Price            Price
	Quality          float64
	Cheap            bool
	SelfHosted       bool
	Fallback         []*Model
	// Deployments are every deployment of the model, in policy order, this
	// one included; each is on its own provider.
	Deployments []*Model
	// Balance spreads the model's requests over its deployments.
	Balance Balance
	// Weight is this deployment's share under [BalanceWeighted]; 0 is a
	// standby.
	Weight int
	// RequestsPerMinute and TokensPerMinute are this deployment's own
	// limits, on top of its provider's; 0 is unlimited.
	RequestsPerMinute int
	TokensPerMinute   int
	// PriceSource says where Price comes from.
	PriceSource PriceSource
	// Vendor is who makes the model (the catalog's vendor), "" when the
	// catalog does not know it.
	Vendor string
	// ToolPrices are micro-USD per use of a tool the vendor runs, by
	// tool (web_search); see ToolUseMicros.
	ToolPrices map[string]int64
	// DeprecatedOn and RetiredOn are the vendor's dates (zero: none);
	// Successor is the model its vendor recommends instead.
	DeprecatedOn, RetiredOn time.Time
	Successor               string
	// Pattern is the pattern the model is served through; nil for the
	// policy's own models.
	Pattern *Pattern
	// series is what metrics and health know a model a client named
	// through an open pattern by: the pattern, since the name is the
	// client's and unbounded. Empty: the model's name.
	series string
}

// Series is the name metrics and the health monitor know m by: its own,
// or for a name only an open pattern admits, the pattern.
func (m *Model) Series() string {
	if m.series != "" {
		return m.series
	}
	return m.Name
}

// RetiredAt reports whether m's vendor has retired it at t.
func (m *Model) RetiredAt(t time.Time) bool { return !m.RetiredOn.IsZero() && !t.Before(m.RetiredOn) }

// Balance is how a model's requests are spread over its deployments.
type Balance string

// The balances.
const (
	// BalanceWeighted draws the first deployment by weight (times its
	// health weight), then the others the same way.
	BalanceWeighted Balance = "weighted"
	// BalanceLeastInFlight puts the deployment with the fewest attempts
	// under way on this replica first; ties are drawn by weight.
	BalanceLeastInFlight Balance = "least_in_flight"
	// BalanceHealth puts the healthiest deployment first, the fastest
	// (p95) among equals; ties are drawn by weight.
	BalanceHealth Balance = "health"
)

var balances = map[string]Balance{"weighted": BalanceWeighted, "least_in_flight": BalanceLeastInFlight, "health": BalanceHealth}

// Limited reports whether the deployment has limits of its own.
func (m *Model) Limited() bool { return m.RequestsPerMinute > 0 || m.TokensPerMinute > 0 }

// OutputLimit is the most m may write for a request that asked for at
// most requested tokens (0: it set no cap): the request's cap, else the
// model's default, never above the model's maximum. Budgets reserve for it
// and every translator sends it upstream, so what a provider may bill is
// what was reserved.
func (m *Model) OutputLimit(requested int) int {
	if requested <= 0 {
		requested = m.DefaultMaxTokens
	}
	if m.MaxOutputTokens > 0 {
		requested = min(requested, m.MaxOutputTokens)
	}
	return requested
}

// FitOutput is [Model.OutputLimit] for a request whose prompt is about
// prompt tokens on a route that fits output to the context window: held
// to the room m's window leaves the prompt, and that room when the
// request and the model set no cap. The router admits no target without
// room, so it is at least 1 where it is used.
func (m *Model) FitOutput(requested, prompt int) int {
	n, room := m.OutputLimit(requested), max(m.ContextWindow-prompt, 0)
	if n <= 0 || n > room {
		return room
	}
	return n
}

// Route is a compiled route.
type Route struct {
	Name              string
	Path              string
	API               API
	Filters           []FilterRef
	Attempts          int
	PerTryIdleTimeout time.Duration
	AnswerTimeout     time.Duration
	StreamTimeout     time.Duration
	Routing           Routing
	// FitOutputToContext holds each target's output cap to the room its
	// context window leaves the prompt ([Model.FitOutput]).
	FitOutputToContext bool
	// TagsFromMetadata takes the body's metadata as the request's tags.
	TagsFromMetadata bool
	// Redact masks sensitive data before it reaches a provider; nil: off.
	Redact *Redaction
	// Hedge is nil on a route that does not hedge.
	Hedge *Hedge
	// Hybrid is nil on a route without a hybrid mode.
	Hybrid *Hybrid
}

// Strategy names a ranking of candidate models.
type Strategy string

// The routing strategies.
const (
	CostOptimized Strategy = "cost-optimized"
	QualityFirst  Strategy = "quality-first"
	LatencyFirst  Strategy = "latency-first"
	Weighted      Strategy = "weighted"
)

var strategies = map[string]Strategy{"cost-optimized": CostOptimized, "quality-first": QualityFirst, "latency-first": LatencyFirst, "weighted": Weighted}

// Routing is a route's compiled routing policy.
type Routing struct {
	Strategy      Strategy
	AutoModel     string
	AllowOverride bool
	Fallback      []*Model
	Weights       Weights
	MediumAt      float64
	ComplexAt     float64
	// Auto, when set, replaces MediumAt and ComplexAt by thresholds
	// calibrated from the route's traffic.
	Auto *Auto
	// Learn, when set, shifts each domain's complexity scores by what
	// verdicts taught of it.
	Learn      *Learn
	Rules      []Rule
	Tiers      map[string][]*Model
	Split      *Split
	Stickiness time.Duration
}

// Auto is a compiled auto-routing target: exactly one of StrongShare and
// QualityTarget is above zero.
type Auto struct {
	StrongShare   float64
	QualityTarget float64
	Window        time.Duration
	MinSamples    int
	// Adjust, when set, lets feedback move the strong share.
	Adjust *Adjust
}

// Adjust bounds the strong share feedback may set, and the mean rating
// weak-model answers are held to.
type Adjust struct {
	Min, Max, QualityBar float64
}

// Learn is a route's compiled learning of domain priors.
type Learn struct {
	HalfLife    time.Duration
	MaxDomains  int
	PriorWeight float64
	Explore     float64
}

// Learning defaults.
const (
	DefaultLearnHalfLife    = 168 * time.Hour
	DefaultLearnMaxDomains  = 10_000
	DefaultLearnPriorWeight = 16
	DefaultLearnExplore     = 0.05
)

// Auto-routing defaults.
const (
	DefaultAutoWindow     = time.Hour
	DefaultAutoMinSamples = 200
)

// Weights of the weighted strategy.
type Weights struct {
	Cost, Latency, Quality, Health, Match, Consistency float64
}

// DefaultWeights are the weighted strategy's weights when none are set.
var DefaultWeights = Weights{Cost: 0.3, Health: 0.25, Match: 0.25, Consistency: 0.2}

// Rule is a compiled routing rule.
type Rule struct {
	Name    string
	When    When
	RouteTo []*Model
}

// When is a compiled rule condition.
type When struct {
	Complexity      []string
	TokenCountAbove int
	RequiresTool    bool
	RequiresVision  bool
	Topic           []string // lower case
	Language        []string
	Sensitive       bool
	Header          map[string]string // lower-case names
	Metadata        map[string]string
}

// Split is a compiled traffic split.
type Split struct {
	Model   *Model
	Percent int
}

// FilterRef is a filter named by a route, with its arguments still raw:
// the filter's declaration decodes them ([filterspec.Ref]).
type FilterRef = filterspec.Ref

// Tenant is a compiled tenant.
type Tenant struct {
	Name   string
	Tier   string
	Models map[string]bool // nil means every model
	Keys   []*Key
	// Strategy and Weights override the route's when set.
	Strategy Strategy
	Weights  *Weights
	Budget   Budget
	// MaxCostPerRequestMicros is 0 when unset.
	MaxCostPerRequestMicros int64
	RateLimit               RateLimit
	// Downgrade serves an over-budget request from a cheaper capable model
	// instead of refusing it.
	Downgrade bool
	Apps      map[string]*App
	// DefaultApp is the app of a request that names none, of a key bound
	// to none and with no default of its own; empty: none.
	DefaultApp     string
	CapturePrompts bool
	// TagBudgets are the budgets of the tenant's requests carrying a tag;
	// nil when it has none.
	TagBudgets map[Tag]Budget
	// Redact, when set, replaces the route's redaction for the tenant's
	// requests.
	Redact *Redaction
}

// Key is a virtual key known by its SHA-256 hash.
type Key struct {
	Name string
	// App is the app the key is bound to; empty: none.
	App string
	// DefaultApp is the app of a request that names none; empty: the
	// tenant's.
	DefaultApp string
	Tenant     *Tenant
	Models     map[string]bool // nil means the tenant's models
	Hash       [32]byte
	RateLimit  RateLimit
	Budget     Budget
	// MaxCostPerRequestMicros is 0 when unset.
	MaxCostPerRequestMicros int64
	// Tags are the tags of the key's requests where they set none of the
	// same key; nil when it has none.
	Tags map[string]string
}

// Provider returns the provider called name.
func (p *Policy) Provider(name string) *Provider { return p.providers[name] }

// Model returns the model clients call name: its first deployment.
func (p *Policy) Model(name string) *Model { return p.models[name] }

// Strongest returns the highest-quality chat model that may accepts (the
// pricier on a tie): the one an all-strong deployment would send a chat
// request to, whose cost auto routing saves. Nil when may accepts none.
func (p *Policy) Strongest(may func(*Model) bool) *Model {
	var best *Model
	for _, m := range p.Models {
		if !m.Caps.Has(CapChat) || !may(m) {
			continue
		}
		if best == nil || m.Quality > best.Quality || (m.Quality == best.Quality && m.Price.OutputPerMTok > best.Price.OutputPerMTok) {
			best = m
		}
	}
	return best
}

// KeyByHash returns the virtual key whose SHA-256 is h.
func (p *Policy) KeyByHash(h [32]byte) *Key { return p.keys[h] }

// Route returns the route serving path, or nil. A models route also
// serves its sub-paths (GET /v1/models/{model}).
func (p *Policy) Route(path string) *Route {
	for _, r := range p.Routes {
		if r.Path == path {
			return r
		}
	}
	for _, r := range p.Routes {
		if r.API.Prefix() && len(path) > len(r.Path)+1 && path[:len(r.Path)+1] == r.Path+"/" {
			return r
		}
	}
	return nil
}

// Allows reports whether the key may use model m: both the key's list and
// its tenant's must allow it, so a key issued at run time with a list of
// its own cannot reach past its tenant's.
func (k *Key) Allows(m string) bool {
	return (k.Models == nil || k.Models[m]) && (k.Tenant.Models == nil || k.Tenant.Models[m])
}

// MayUse reports whether a caller may use model m: by its key when it
// has one, else by its tenant's list; a route without auth (no tenant)
// may use every model.
func MayUse(k *Key, t *Tenant, m string) bool {
	if k != nil {
		return k.Allows(m)
	}
	return t == nil || t.Models == nil || t.Models[m]
}

// Authority is the provider's host, with the port when it is not the
// scheme's default: the Host header a provider expects.
func (p *Provider) Authority() string {
	if (p.TLS && p.Port == 443) || (!p.TLS && p.Port == 80) {
		return p.Host
	}
	return net.JoinHostPort(p.Host, strconv.Itoa(p.Port))
}
