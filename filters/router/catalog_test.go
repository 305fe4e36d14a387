package router

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/state/health"
)

// catalogPolicy has a model of the policy, a retired catalog model named
// by the policy, open and closed patterns and aliases; retired_models is
// filled in per test.
const catalogPolicy = `
gateway: {retired_models: %s}
providers:
  - {name: oa, kind: openai, base_url: "http://127.0.0.1:1"}
  - {name: an, kind: anthropic, base_url: "http://127.0.0.1:2"}
models:
  - {name: gpt-4o-mini, provider: oa}
  - {name: claude-3-5-sonnet, provider: an}
  - {match: "claude-*", provider: an, unpriced: worst_case, price_usd_per_mtok: {input: 15, output: 75}}
  - {match: "gpt-*", provider: oa, unpriced: refuse}
aliases:
  - {name: house, to: gpt-4o-mini}
  - {name: pick-for-me, to: auto}
  - {name: legacy-sonnet, to: claude-3-5-sonnet}
routes:
  - name: chat
    path: /v1/chat/completions
    api: chat_completions
    routing: {fallback: [gpt-4o-mini]}
tenants:
  - name: acme
    models: [house, "claude-*"]
`

func catalogRouter(t *testing.T, retired string, now time.Time) (*Router, *policy.Policy) {
	t.Helper()
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(strings.Replace(catalogPolicy, "%s", retired, 1))}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRouter(p, p.Routes[0], nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.now = func() time.Time { return now }
	return r, p
}

// TestDecideCatalog: names a client sends are served through aliases and
// patterns, priced as the catalog or the pattern says, and a retired
// model as the policy's retired_models says.
func TestDecideCatalog(t *testing.T) {
	t.Parallel()
	today := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		retired    string
		model      string
		tenant     bool // call as tenant acme
		wantFirst  string
		wantUp     string
		wantSource policy.PriceSource
		wantStatus int
		wantCode   string
		wantSubst  string
		wantReason string
	}{
		{name: "an alias is served by its target", retired: "refuse", model: "house", wantFirst: "gpt-4o-mini", wantUp: "gpt-4o-mini", wantSource: policy.PriceCatalog, wantReason: "model named by the client as house"},
		{name: "an alias of auto lets the strategy choose", retired: "refuse", model: "pick-for-me", wantFirst: "gpt-4o-mini", wantUp: "gpt-4o-mini", wantSource: policy.PriceCatalog, wantReason: "strategy cost-optimized; alias pick-for-me of auto"},
		{name: "a catalog model through a pattern", retired: "refuse", model: "claude-opus-5-5", wantFirst: "claude-opus-5-5", wantUp: "claude-opus-5-5", wantSource: policy.PriceCatalog},
		{name: "a model released tomorrow, at the worst case", retired: "refuse", model: "claude-opus-6", wantFirst: "claude-opus-6", wantUp: "claude-opus-6", wantSource: policy.PricePattern},
		{name: "a closed pattern refuses what the catalog does not know", retired: "refuse", model: "gpt-9-ultra", wantStatus: http.StatusNotFound, wantCode: "model_not_found", wantReason: "gpt-* on provider oa serves only the models the gateway's catalog prices"},
		{name: "a name nothing serves", retired: "refuse", model: "llama-9", wantStatus: http.StatusNotFound, wantCode: "model_not_found"},
		{name: "a retired model is refused, naming its successor", retired: "refuse", model: "claude-3-5-sonnet", wantStatus: http.StatusNotFound, wantCode: "model_retired", wantReason: "retired by its vendor on 2025-10-22; use 'claude-sonnet-5-5' instead"},
		{name: "or served by its successor", retired: "substitute", model: "claude-3-5-sonnet", wantFirst: "claude-sonnet-5-5", wantUp: "claude-sonnet-5-5", wantSource: policy.PriceCatalog, wantSubst: "claude-3-5-sonnet -> claude-sonnet-5-5"},
		{name: "through an alias too", retired: "substitute", model: "legacy-sonnet", wantFirst: "claude-sonnet-5-5", wantUp: "claude-sonnet-5-5", wantSource: policy.PriceCatalog, wantSubst: "claude-3-5-sonnet -> claude-sonnet-5-5"},
		{name: "or sent as named", retired: "serve", model: "claude-3-5-sonnet", wantFirst: "claude-3-5-sonnet", wantUp: "claude-3-5-sonnet-20241022", wantSource: policy.PriceCatalog},
		{name: "a tenant's list may hold the alias", retired: "refuse", model: "house", tenant: true, wantFirst: "gpt-4o-mini", wantUp: "gpt-4o-mini", wantSource: policy.PriceCatalog},
		{name: "but the alias does not open its model's own name", retired: "refuse", model: "gpt-4o-mini", tenant: true, wantStatus: http.StatusForbidden, wantCode: "model_not_allowed"},
		{name: "a tenant's list may hold the pattern", retired: "refuse", model: "claude-opus-6", tenant: true, wantFirst: "claude-opus-6", wantUp: "claude-opus-6", wantSource: policy.PricePattern},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, p := catalogRouter(t, tt.retired, today)
			q := &Query{Chat: chat(t, userMsg(tt.model, "hello"))}
			if tt.tenant {
				q.Tenant = p.Tenants[0]
			}
			d, e := r.Decide(q)
			if tt.wantStatus != 0 {
				if e == nil || e.Status != tt.wantStatus || e.Code != tt.wantCode || !strings.Contains(e.Message, tt.wantReason) {
					t.Fatalf("got %+v, want %d %s containing %q", e, tt.wantStatus, tt.wantCode, tt.wantReason)
				}
				return
			}
			if e != nil {
				t.Fatalf("refused: %+v", e)
			}
			first := d.Plan[0]
			if first.Name != tt.wantFirst || first.Upstream != tt.wantUp || first.PriceSource != tt.wantSource {
				t.Errorf("first %s as %q (%s), want %s as %q (%s)", first.Name, first.Upstream, first.PriceSource, tt.wantFirst, tt.wantUp, tt.wantSource)
			}
			if d.Substituted != tt.wantSubst || !strings.Contains(d.Reason, tt.wantReason) {
				t.Errorf("substituted %q, reason %q; want %q, containing %q", d.Substituted, d.Reason, tt.wantSubst, tt.wantReason)
			}
		})
	}
}

// TestPatternHealthSeries: the health monitor knows a model an open
// pattern serves by the pattern, so names clients make up add no entries.
func TestPatternHealthSeries(t *testing.T) {
	t.Parallel()
	h := &askedHealth{asked: map[string]bool{}}
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(strings.Replace(catalogPolicy, "%s", "refuse", 1))}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRouter(p, p.Routes[0], h, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"claude-opus-6", "claude-opus-7", "claude-opus-5-5"} {
		if _, e := r.Decide(&Query{Chat: chat(t, userMsg(name, "hello"))}); e != nil {
			t.Fatal(e)
		}
	}
	for _, want := range []string{"an/claude-*", "an/claude-opus-5-5"} {
		if !h.asked[want] {
			t.Errorf("the monitor was not asked about %s (asked %v)", want, h.asked)
		}
	}
	for k := range h.asked {
		if strings.Contains(k, "claude-opus-6") || strings.Contains(k, "claude-opus-7") {
			t.Errorf("the monitor was asked about %s: a client's name", k)
		}
	}
}

// askedHealth admits everything and remembers which provider/model it
// was asked about.
type askedHealth struct {
	fakeHealth
	asked map[string]bool
}

func (a *askedHealth) Admit(provider, model string, key uint64) health.Admission {
	a.asked[provider+"/"+model] = true
	return a.fakeHealth.Admit(provider, model, key)
}

// TestNoAddressTriedLast: a provider whose name resolved to no address
// goes after the others, since Envoy does not retry an attempt without an
// address.
func TestNoAddressTriedLast(t *testing.T) {
	t.Parallel()
	h := fakeHealth{noAddress: map[string]string{"oa": "DNS: 127.0.0.1 resolved to no address"}}
	r, _ := testRouter(t, false, h)
	d, e := r.Decide(&Query{Chat: chat(t, userMsg("strong", "hello"))})
	if e != nil {
		t.Fatal(e)
	}
	if got := names(d.Plan); got != "mid,strong" {
		t.Errorf("plan %s, want mid (strong's fallback), then strong: its provider oa has no address", got)
	}
	if !strings.Contains(d.Reason, "no address, tried last: strong (DNS: 127.0.0.1 resolved to no address)") {
		t.Errorf("reason %q", d.Reason)
	}
}
