package quota

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/state/store"
)

// deploymentPolicy has one model on two deployments: east with a
// request a minute of its own, west as its standby (weight 0, so plans
// are east then west), priced higher; and another model on east's
// provider, which east's own limit must not touch.
var deploymentPolicy = fmt.Sprintf(`
gateway:
  governor: {high_at: 0.8, cheap_only_at: 0.95, floor_usd: 0}
providers:
  - {name: east, kind: openai, base_url: "http://127.0.0.1:1"}
  - {name: west, kind: openai, base_url: "http://127.0.0.1:2"}
models:
  - {name: m, provider: east, context_window: 100000, max_output_tokens: 1000, price_usd_per_mtok: {input: 1, output: 2}, limits: {requests_per_minute: 1, tokens_per_minute: 500}}
  - {name: m, provider: west, weight: 0, price_usd_per_mtok: {input: 10, output: 30}}
  - {name: other, provider: east, context_window: 100000, max_output_tokens: 1000, price_usd_per_mtok: {input: 1, output: 2}}
routes:
  - {name: chat, path: /v1/chat/completions, api: chat_completions, filters: [auth, router, quota]}
tenants:
  - name: free
    keys: [{name: f, sha256: %s}]
  - name: tight
    budget_usd: {daily: 0.001}
    keys: [{name: t, sha256: %s}]
`, sha("sk-free"), sha("sk-tight"))

func deploymentsOf(x *filters.Exchange) string {
	var out []string
	for _, t := range x.Plan {
		out = append(out, t.Provider().Name+"/"+t.Model.Name)
	}
	return strings.Join(out, ",")
}

// TestDeploymentLimits: a deployment at its own limit leaves the plan and
// its sibling serves, while its provider's other models keep going; its
// token window is corrected to what the request used.
func TestDeploymentLimits(t *testing.T) {
	r := newRigFor(t, deploymentPolicy, t0)
	east := func() [2]int64 {
		t.Helper()
		w, err := r.mem.AddWindows(context.Background(), "provider:east", []store.WindowLine{
			{Name: "model:m/rpm", Limit: 1, Size: time.Minute}, {Name: "model:m/tpm", Limit: 500, Size: time.Minute},
		})
		if err != nil {
			t.Fatal(err)
		}
		return [2]int64{w.Lines[0].Used, w.Lines[1].Used}
	}

	first, refusal := r.send("sk-free", chat("m", 100))
	if refusal != nil {
		t.Fatal(refusal)
	}
	if got := deploymentsOf(first); got != "east/m,west/m" {
		t.Fatalf("first plan %s", got)
	}
	if got := east(); got != [2]int64{1, 108} {
		t.Errorf("east/m's own windows after the first request: %v, want [1 108]", got)
	}
	r.served(first)
	r.finish(first, used(20, 48), nil)
	if got := east(); got != [2]int64{1, 28} {
		t.Errorf("east/m's own windows after the first request ended: %v, want [1 28] (its tokens corrected)", got)
	}

	second, refusal := r.send("sk-free", chat("m", 100))
	if refusal != nil {
		t.Fatal(refusal)
	}
	if got := deploymentsOf(second); got != "west/m" || !strings.Contains(second.RouteReason, "skipped providers at their rate limit: east/m") {
		t.Errorf("second plan %s (%s), want west/m with east/m skipped at its limit", got, second.RouteReason)
	}
	other, refusal := r.send("sk-free", chat("other", 100))
	if refusal != nil || deploymentsOf(other) != "east/other" {
		t.Errorf("east's other model: plan %s, refusal %v", deploymentsOf(other), refusal)
	}
}

// TestDeploymentPrices: a request reserves the worst case of the dearest
// deployment it may reach, and a budget too small for it keeps the
// deployments it can pay for.
func TestDeploymentPrices(t *testing.T) {
	// "hello" is 8 prompt tokens; with max_tokens 20, east may cost
	// 8×1 + 20×2 = 48 micro-USD and west 8×10 + 20×30 = 680.
	d := demand{prompt: 8, output: 20, choices: 1, chat: true}
	r := newRigFor(t, deploymentPolicy, t0)
	m := r.pol.Model("m")
	if got := d.highest([]filters.Target{{Model: m.Deployments[0]}, {Model: m.Deployments[1]}}); got != 680 {
		t.Errorf("reserved %d, want west's worst case 680", got)
	}
	r.spendEarlier("tight", 400) // 600 of the 1,000 left
	x, refusal := r.send("sk-tight", chat("m", 20))
	if refusal != nil {
		t.Fatal(refusal)
	}
	if got := deploymentsOf(x); got != "east/m" {
		t.Errorf("plan %s, want east/m alone: west's worst case does not fit the budget", got)
	}
}
