package quota

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/state/store"
)

// tagPolicy budgets two tags of tenant acme: a request of "hello" with
// max_tokens 100 may cost 8×1 + 100×2 = 208 micro-USD on small.
var tagPolicy = fmt.Sprintf(`
providers:
  - {name: pb, kind: openai, base_url: "http://127.0.0.1:2"}
models:
  - {name: small, provider: pb, context_window: 100000, max_output_tokens: 1000, price_usd_per_mtok: {input: 1, output: 2}}
routes:
  - {name: chat, path: /v1/chat/completions, api: chat_completions, filters: [auth, router, quota], tags_from_metadata: true}
tenants:
  - name: acme
    budget_usd: {daily: 100}
    tag_budgets:
      - {tag: team=search, budget_usd: {daily: 0.0005}}
      - {tag: feature=summarize, budget_usd: {monthly: 1}}
    keys:
      - {name: k1, sha256: %s}
      - {name: search-key, sha256: %s, tags: {team: search}}
`, sha("sk-acme"), sha("sk-search"))

// TestTagBudgets: a request carrying a budgeted tag (from the header, the
// key or the body's metadata) reserves on the tag's budget too, in the
// same store admission as the tenant's; a tag without a budget, or a
// request without the tag, costs the tag's budget nothing; a request the
// tag's budget cannot cover is refused naming the tag.
func TestTagBudgets(t *testing.T) {
	search := store.Scope{Tenant: "acme", Tag: "team=search"}
	summarize := store.Scope{Tenant: "acme", Tag: "feature=summarize"}
	tenant := store.Scope{Tenant: "acme"}
	tests := []struct {
		name string
		key  string
		body string
		hdr  []filters.Header
		// wantReserved is what each line holds reserved after admission.
		wantReserved map[store.Scope]int64
	}{
		{"a tag from the header", "sk-acme", chat("small", 100), []filters.Header{{Key: filters.HeaderTags, Value: "team=search"}},
			map[store.Scope]int64{tenant: 208, search: 208, summarize: 0}},
		{"two budgeted tags", "sk-acme", chat("small", 100), []filters.Header{{Key: filters.HeaderTags, Value: "feature=summarize, team=search"}},
			map[store.Scope]int64{tenant: 208, search: 208, summarize: 208}},
		{"the key's tag", "sk-search", chat("small", 100), nil,
			map[store.Scope]int64{tenant: 208, search: 208, summarize: 0}},
		{"the header's value in place of the key's", "sk-search", chat("small", 100), []filters.Header{{Key: filters.HeaderTags, Value: "team=ads"}},
			map[store.Scope]int64{tenant: 208, search: 0, summarize: 0}},
		{"a tag of the body's metadata", "sk-acme", `{"model":"small","max_tokens":100,"metadata":{"feature":"summarize"},"messages":[{"role":"user","content":"hello"}]}`, nil,
			map[store.Scope]int64{tenant: 208, search: 0, summarize: 208}},
		{"a tag without a budget", "sk-acme", chat("small", 100), []filters.Header{{Key: filters.HeaderTags, Value: "team=ads"}},
			map[store.Scope]int64{tenant: 208, search: 0, summarize: 0}},
		{"no tag", "sk-acme", chat("small", 100), nil,
			map[store.Scope]int64{tenant: 208, search: 0, summarize: 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRigFor(t, tagPolicy, t0)
			r.st.takeCalls()
			if _, err := r.send(tt.key, tt.body, tt.hdr...); err != nil {
				t.Fatal(err)
			}
			// The governor's read of the tenant's budget aside, one call.
			if calls := r.st.takeCalls(); calls["admit"] != 1 || calls["reserve"] != 0 {
				t.Errorf("store calls %v, want the one admission", calls)
			}
			got := map[store.Scope]int64{}
			for sc := range tt.wantReserved {
				p := store.Daily
				if sc == summarize {
					p = store.Monthly
				}
				got[sc] = r.budget(sc, p).Reserved
			}
			if diff := cmp.Diff(tt.wantReserved, got); diff != "" {
				t.Errorf("reserved (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("the tag's budget refuses, naming the tag", func(t *testing.T) {
		r := newRigFor(t, tagPolicy, t0)
		x, err := r.send("sk-search", chat("small", 100))
		if err != nil {
			t.Fatal(err)
		}
		r.served(x)
		r.finish(x, used(100, 400), nil) // 400 of the tag's 500 spent
		_, e := r.send("sk-search", chat("small", 100))
		want := "the daily budget of tag team=search of tenant acme is exhausted"
		if e == nil || e.Status != 429 || e.Code != "insufficient_quota" || e.Message[:len(want)] != want {
			t.Fatalf("got %v, want 429 insufficient_quota %q…", e, want)
		}
		if _, e := r.send("sk-acme", chat("small", 100)); e != nil {
			t.Errorf("a request without the tag: %v, want it admitted", e)
		}
	})
}
