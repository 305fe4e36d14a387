package e2e

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/providersim"
)

// TestPricedFeaturesAreHeld: on the Anthropic pass-through, what would
// make an answer cost more than its reservation does not pass (issue 30,
// finding 3): max_tokens above the model's cap is held to it, a
// long-context beta flag is removed, a web search without max_uses is
// refused, and the rest of the client's flags reach Anthropic.
func TestPricedFeaturesAreHeld(t *testing.T) {
	t.Parallel()
	const marker = "priced features held"
	beta := map[string]string{"anthropic-beta": "output-128k-2025-02-19,context-1m-2025-08-07,claude-code-20250219"}
	resp, b := postMessages(t, `{"model":"claude-3-5-haiku","max_tokens":64,"tools":[{"type":"web_search_20250305","name":"web_search"}],"messages":[{"role":"user","content":"search"}]}`, beta)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(b, "max_uses") {
		t.Errorf("web search without max_uses: %d %s; want 400 naming max_uses", resp.StatusCode, b)
	}
	resp, b = postMessages(t, `{"model":"claude-3-5-haiku","max_tokens":100000,"messages":[{"role":"user","content":"`+marker+`"}]}`, beta)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	st, err := shared.Sim.Stats("anthropic")
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(st.Recent, func(r providersim.RecordedRequest) bool { return strings.Contains(r.Body, marker) })
	if i < 0 {
		t.Fatal("Anthropic never got the request")
	}
	got := st.Recent[i]
	if !strings.Contains(got.Body, `"max_tokens":8192`) {
		t.Errorf("Anthropic got %s; want max_tokens held to the model's 8192", got.Body)
	}
	if h := got.Header.Get("anthropic-beta"); h != "output-128k-2025-02-19,claude-code-20250219" {
		t.Errorf("Anthropic got anthropic-beta %q; want the long-context flag removed and the rest kept", h)
	}
}

// TestMessagesBodiesAreBounded: /v1/messages runs the member, depth and
// size checks chat runs (issue 30, findings 4 and 7).
func TestMessagesBodiesAreBounded(t *testing.T) {
	t.Parallel()
	tiny := strings.Repeat(`{"type":"text","text":"x"},`, 100_000)
	for _, tc := range []struct{ name, body, want string }{
		{"a member in two cases", `{"model":"claude-3-5-haiku","max_tokens":8000,"MAX_TOKENS":1,"messages":[{"role":"user","content":"hi"}]}`, "send each member once"},
		{"a lone case variant", `{"model":"claude-3-5-haiku","MAX_TOKENS":1,"max_tokens":8000,"messages":[{"role":"user","content":"hi"}]}`, "MAX_TOKENS"},
		{"metadata 9,000 deep", `{"model":"claude-3-5-haiku","max_tokens":8,"metadata":` + strings.Repeat(`{"a":`, 9000) + `1` + strings.Repeat(`}`, 9000) + `,"messages":[{"role":"user","content":"hi"}]}`, "nests deeper"},
		{"100,000 tiny blocks", `{"model":"claude-3-5-haiku","max_tokens":8,"messages":[{"role":"user","content":[` + tiny + `{"type":"text","text":"x"}]}]}`, "array elements"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			resp, b := postMessages(t, tc.body, nil)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(b, tc.want) || !strings.Contains(b, `"type":"error"`) {
				t.Errorf("%d %s; want a 400 in Anthropic's envelope saying %q", resp.StatusCode, b, tc.want)
			}
			t.Logf("refused in %v", time.Since(start))
		})
	}
}

// TestAdminGuessesAreThrottled: past ten wrong admin keys in a minute from
// one address, the admin API answers 429 before reading the key (issue
// 30, finding 6), through real Envoy, which names the client's address.
func TestAdminGuessesAreThrottled(t *testing.T) {
	t.Parallel()
	s := startStack(t, defaultOptions())
	codes := map[int]int{}
	for range 15 {
		resp, _ := withKey(t, s, http.MethodGet, "/admin/providers", "sk-guess", "")
		codes[resp.StatusCode]++
	}
	if codes[http.StatusUnauthorized] != 10 || codes[http.StatusTooManyRequests] != 5 {
		t.Errorf("statuses %v; want ten 401 and then 429", codes)
	}
	if resp, b := withKey(t, s, http.MethodGet, "/admin/providers", adminKey, ""); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("retry-after") == "" {
		t.Errorf("the right key from the same address: %d %s; want 429 with retry-after until the minute ends", resp.StatusCode, b)
	}
}

// TestWebSearchesAreCharged: a web search OpenAI runs for a Responses
// answer is billed per use: the ledger row charges it at the model's price
// per search (gpt-4o-mini has none in the catalog: the stated worst case,
// $35 per 1,000), on top of the tokens, and OpenAI was told the most
// searches the reservation covered.
func TestWebSearchesAreCharged(t *testing.T) {
	t.Parallel()
	body := `{"model":"gpt-4o-mini","input":"[[web_search]] what is new?","tools":[{"type":"web_search"}]}`
	resp, b := withKey(t, shared, http.MethodPost, "/v1/responses", demoKey, body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"web_search_call"`) {
		t.Fatalf("%d %s; want an answer that searched", resp.StatusCode, b)
	}
	rec := awaitRecord(t, shared, resp.Header.Get("x-request-id"))
	pol, err := policy.Load(shared.PolicyDir)
	if err != nil {
		t.Fatal(err)
	}
	tokens := pol.Model("gpt-4o-mini").Price.Micros(rowTokens(rec))
	if rec.CostMicros != tokens+35_000 {
		t.Errorf("cost %d µUSD; want the tokens' %d and one search's 35000", rec.CostMicros, tokens)
	}
	if !slices.ContainsFunc(recentBodies(t, "openai"), func(b string) bool {
		return strings.Contains(b, "what is new?") && strings.Contains(b, `"max_tool_calls":10`)
	}) {
		t.Error("OpenAI was not told the searches the reservation covers (max_tool_calls)")
	}
}
