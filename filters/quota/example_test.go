package quota

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/filters/translate"
	"github.com/switchyard/switchyard/state/store"
)

// examplePolicy is the worked example of docs/BUDGETS.md.
var examplePolicy = fmt.Sprintf(`
providers:
  - {name: openai, kind: openai, base_url: "http://127.0.0.1:1"}
  - {name: anthropic, kind: anthropic, base_url: "http://127.0.0.1:2"}
  - {name: gemini, kind: gemini, base_url: "http://127.0.0.1:3"}
models:
  - {name: gpt-4o, provider: openai, context_window: 128000, max_output_tokens: 16384, price_usd_per_mtok: {input: 2.50, output: 10.00}, fallback: [claude-3-5-sonnet, gemini-2.0-flash]}
  - {name: claude-3-5-sonnet, provider: anthropic, context_window: 200000, max_output_tokens: 8192, price_usd_per_mtok: {input: 3.00, output: 15.00}}
  - {name: gemini-2.0-flash, provider: gemini, context_window: 1048576, max_output_tokens: 8192, cheap: true, price_usd_per_mtok: {input: 0.10, output: 0.40}}
routes:
  - {name: chat, path: /v1/chat/completions, api: chat_completions, filters: [auth, router, quota]}
tenants:
  - name: acme
    budget_usd: {daily: 20, monthly: 300}
    max_cost_per_request_usd: 1
    over_budget: %s
    apps:
      - {name: web, budget_usd: {daily: 10}}
    keys: [{name: web-key, app: web, sha256: %s}]
`, "%s", sha("sk-web"))

var (
	acmeDaily   = store.BudgetLine{Scope: store.Scope{Tenant: "acme"}, Period: store.Daily, Limit: 20_000_000}
	acmeMonthly = store.BudgetLine{Scope: store.Scope{Tenant: "acme"}, Period: store.Monthly, Limit: 300_000_000}
	webDaily    = store.BudgetLine{Scope: store.Scope{Tenant: "acme", App: "web"}, Period: store.Daily, Limit: 10_000_000}
)

// exampleRequest is R1 and R2: gpt-4o, max_tokens 2000, a prompt estimated
// at 1 200 tokens (6 of chat overhead and 4 776 ASCII bytes).
var exampleRequest = fmt.Sprintf(`{"model":"gpt-4o","max_tokens":2000,"messages":[{"role":"user","content":%q}]}`, strings.Repeat("abcd", 1194))

// at spends micros on lines at a time of day, as earlier requests did.
func (r *rig) at(when time.Time, micros int64, lines ...store.BudgetLine) {
	r.t.Helper()
	saved := r.clock.Now()
	r.clock.Set(when)
	defer r.clock.Set(saved)
	id := store.ReservationID{Tenant: "acme", Request: fmt.Sprintf("earlier-%d", r.seq)}
	r.seq++
	if err := r.mem.Reserve(context.Background(), id, lines, micros, time.Hour); err != nil {
		r.t.Fatal(err)
	}
	if _, err := r.mem.Commit(context.Background(), id, micros); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) inFlight(micros int64, lines ...store.BudgetLine) {
	r.t.Helper()
	if err := r.mem.Reserve(context.Background(), store.ReservationID{Tenant: "acme", Request: "in-flight"}, lines, micros, time.Hour); err != nil {
		r.t.Fatal(err)
	}
}

type lineState struct{ Spent, Reserved, Hour int64 }

func (r *rig) state(l store.BudgetLine, hour int) lineState {
	r.t.Helper()
	st, err := r.mem.Budget(context.Background(), l)
	if err != nil {
		r.t.Fatal(err)
	}
	return lineState{st.Spent, st.Reserved, st.Hourly[hour]}
}

// TestWorkedExample runs R1 and R2 of docs/BUDGETS.md.
func TestWorkedExample(t *testing.T) {
	day := func(h, m int) time.Time { return time.Date(2026, 3, 15, h, m, 0, 0, time.UTC) }

	t.Run("R1 reserves the plan's worst case and commits the answer's cost", func(t *testing.T) {
		r := newRigFor(t, fmt.Sprintf(examplePolicy, "downgrade"), day(9, 12))
		r.at(time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC), 113_600_000, acmeMonthly)
		r.at(day(8, 0), 2_100_000, webDaily, acmeDaily, acmeMonthly)
		r.at(day(8, 30), 3_990_000, acmeDaily, acmeMonthly)
		r.at(day(9, 5), 310_000, acmeDaily, acmeMonthly)
		r.inFlight(150_000, acmeDaily, acmeMonthly)

		x, err := r.send("sk-web", exampleRequest)
		if err != nil {
			t.Fatal(err)
		}
		if x.Pressure != 0 || !cmp.Equal(planOf(x), []string{"gpt-4o", "claude-3-5-sonnet", "gemini-2.0-flash"}) {
			t.Errorf("pressure %d, plan %v; want 0 and gpt-4o's chain", x.Pressure, planOf(x))
		}
		if got := r.state(acmeDaily, 9); got.Reserved != 150_000+33_600 {
			t.Errorf("tenant daily reserved %d, want 183600", got.Reserved)
		}
		r.served(x)
		u := filters.Usage{Known: true, PromptTokens: 1_150, CompletionTokens: 640}
		if u.CostMicros = translate.Cost(x.Plan[0].Model, u); u.CostMicros != 9_275 {
			t.Fatalf("the answer costs %d, want 9275", u.CostMicros)
		}
		r.finish(x, u, nil)
		got := []lineState{r.state(acmeDaily, 9), r.state(acmeMonthly, 9), r.state(webDaily, 9)}
		want := []lineState{{6_409_275, 150_000, 319_275}, {120_009_275, 150_000, 0}, {2_109_275, 0, 9_275}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("after R1 (-want +got):\n%s", diff)
		}
	})

	r2 := func(t *testing.T, overBudget string) (*rig, *filters.Exchange, *openaiapi.Error) {
		r := newRigFor(t, fmt.Sprintf(examplePolicy, overBudget), day(15, 40))
		r.at(day(10, 0), 9_985_000, webDaily, acmeDaily, acmeMonthly)
		r.at(day(11, 0), 4_515_000, acmeDaily, acmeMonthly)
		r.at(day(15, 10), 700_000, acmeDaily, acmeMonthly)
		r.inFlight(400_000, acmeDaily, acmeMonthly)
		x, err := r.send("sk-web", exampleRequest)
		return r, x, err
	}
	t.Run("R2 is downgraded to the model that fits the app's budget", func(t *testing.T) {
		r, x, err := r2(t, "downgrade")
		if err != nil {
			t.Fatal(err)
		}
		if x.Pressure != 1 || !cmp.Equal(planOf(x), []string{"gemini-2.0-flash"}) || !strings.HasSuffix(x.RouteReason, "; downgraded to fit the budget") {
			t.Errorf("pressure %d, plan %v, reason %q; want 1, [gemini-2.0-flash], downgraded", x.Pressure, planOf(x), x.RouteReason)
		}
		if got := r.state(webDaily, 15); got.Reserved != 920 {
			t.Errorf("web daily reserved %d, want 920", got.Reserved)
		}
	})
	t.Run("R2 is refused when the tenant refuses", func(t *testing.T) {
		_, _, e := r2(t, "refuse")
		if e == nil {
			t.Fatal("R2 was admitted")
		}
		want := "the daily budget of app web of tenant acme is exhausted: 0.015 of 10 USD left, and this request may cost up to 0.0336 USD; it renews at 2026-03-16T00:00:00Z"
		if e.Status != 429 || e.Code != "insufficient_quota" || e.Message != want || e.Headers["retry-after"] != "30000" || e.Headers["x-should-retry"] != "false" {
			t.Errorf("got %d %s %q %v;\nwant 429 insufficient_quota %q, retry-after 30000, x-should-retry false", e.Status, e.Code, e.Message, e.Headers, want)
		}
	})
}

// TestWorstCaseCountsEveryChoice: n answers may each write the output cap,
// and each is billed, so the reservation is the prompt plus n times the
// output at the plan's dearest model (claude-3-5-sonnet: 1 200 × $3 +
// 4 × 2 000 × $15 per million).
func TestWorstCaseCountsEveryChoice(t *testing.T) {
	r := newRigFor(t, fmt.Sprintf(examplePolicy, "refuse"), time.Date(2026, 3, 15, 9, 0, 0, 0, time.UTC))
	body := strings.Replace(exampleRequest, `"max_tokens":2000,`, `"max_tokens":2000,"n":4,`, 1)
	if _, err := r.send("sk-web", body); err != nil {
		t.Fatal(err)
	}
	if got := r.state(acmeDaily, 9); got.Reserved != 3_600+120_000 {
		t.Errorf("tenant daily reserved %d, want 123600", got.Reserved)
	}
}

// TestWorstCaseCoversPricedSearches: the reservation holds every web
// search the request lets its answer run, at the model's price per use.
func TestWorstCaseCoversPricedSearches(t *testing.T) {
	m := &policy.Model{Price: policy.Price{InputPerMTok: 1_000_000, OutputPerMTok: 2_000_000}, MaxOutputTokens: 1000,
		ToolPrices: map[string]int64{"web_search": 10_000}, Provider: &policy.Provider{Kind: policy.KindAnthropic}}
	plain := demand{prompt: 1000, output: 500, choices: 1, chat: true}
	searching := plain
	searching.searches, searching.searchKind = 5, policy.KindAnthropic
	if got, want := searching.worst(m)-plain.worst(m), int64(5*10_000); got != want {
		t.Errorf("five searches add %d to the worst case, want %d", got, want)
	}
	// A translation leaves the search tool out: no search to reserve for.
	searching.searchKind = policy.KindOpenAI
	if got := searching.worst(m) - plain.worst(m); got != 0 {
		t.Errorf("searches on a provider that cannot run them add %d, want 0", got)
	}
}

// TestWorstCaseCoversCacheWrites: the reservation holds a prompt that is
// all prompt-cache writes at the dearest write rate the model has, when
// writes cost more than input: what any answer can then bill.
func TestWorstCaseCoversCacheWrites(t *testing.T) {
	d := demand{prompt: 1000, output: 500, choices: 1, chat: true}
	tests := []struct {
		name  string
		price policy.Price
		want  int64
	}{
		{"no write premium: the prompt at the input rate", policy.Price{InputPerMTok: 4_000_000, OutputPerMTok: 20_000_000,
			CacheWritePerMTok: 4_000_000, CacheWrite1hPerMTok: 4_000_000}, 1000*4 + 500*20},
		{"Anthropic's: the prompt at the hour's write rate", policy.Price{InputPerMTok: 4_000_000, OutputPerMTok: 20_000_000,
			CacheWritePerMTok: 5_000_000, CacheWrite1hPerMTok: 8_000_000}, 1000*8 + 500*20},
		{"OpenAI's: the prompt at the write rate", policy.Price{InputPerMTok: 2_000_000, OutputPerMTok: 10_000_000,
			CacheWritePerMTok: 2_500_000, CacheWrite1hPerMTok: 2_500_000}, 1000*2.5 + 500*10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &policy.Model{Price: tt.price, MaxOutputTokens: 1000}
			if got := d.worst(m); got != tt.want {
				t.Errorf("worst case %d, want %d", got, tt.want)
			}
			// The worst case stays above the cost of any answer within it.
			all := filters.Usage{PromptTokens: d.prompt, CacheWrite1hTokens: d.prompt, CompletionTokens: d.output}
			if c := translate.Cost(m, all); c > d.worst(m) {
				t.Errorf("an answer writing its whole prompt for an hour costs %d, above the worst case %d", c, d.worst(m))
			}
		})
	}
}
