package e2e

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/stack"
)

// catalogOverlay adds to configs/local an open pattern with a stated worst
// case (the simulators answer any name) and an alias.
const catalogOverlay = `
models:
  - {match: "future-*", provider: openai, unpriced: worst_case, price_usd_per_mtok: {input: 20, output: 80}}
aliases:
  - {name: team-default, to: gpt-4o-mini}
`

// patternPrice is the overlay's price for the names the catalog does not
// know, in micro-USD per million tokens.
var patternPrice = policy.Price{InputPerMTok: 20_000_000, OutputPerMTok: 80_000_000, CachedInputPerMTok: 20_000_000}

// TestCatalogPatternsAndAliases: a model released after the catalog is
// served through an open pattern and charged at its stated worst case,
// never nothing; the same name under a closed pattern is a 404; an alias
// is served by its target and the ledger keeps both names; Claude Code's
// default model is served by configs/local's pattern at the catalog's
// price.
func TestCatalogPatternsAndAliases(t *testing.T) {
	o := stack.Options{Overlay: map[string]string{"zz-catalog.yaml": catalogOverlay}}
	s := startStack(t, o)

	t.Run("an unknown model under an open pattern, at the worst case", func(t *testing.T) {
		status, id, body := post(t, s, demoKey, `{"model":"future-model-1","max_tokens":30,"messages":[{"role":"user","content":"from the future"}]}`)
		if status != http.StatusOK {
			t.Fatalf("%d %s", status, body)
		}
		r := awaitRecord(t, s, id)
		want := patternPrice.Micros(rowTokens(r))
		if r.RequestedModel != "future-model-1" || r.ServedModel != "future-model-1" || r.Provider != "openai" ||
			r.PriceSource != string(policy.PricePattern) || r.CostMicros != want || want == 0 {
			t.Errorf("row: %s served by %s/%s at %d micro-USD (%s); want future-model-1 on openai at %d (pattern)",
				r.RequestedModel, r.Provider, r.ServedModel, r.CostMicros, r.PriceSource, want)
		}
		if got := lastRequestModel(t, s, "openai"); got != "future-model-1" {
			t.Errorf("the provider was asked for %q, want the name as sent", got)
		}
	})

	t.Run("an alias is served by its target, with both names in the ledger", func(t *testing.T) {
		status, id, body := post(t, s, demoKey, `{"model":"team-default","max_tokens":30,"messages":[{"role":"user","content":"who answers?"}]}`)
		if status != http.StatusOK {
			t.Fatalf("%d %s", status, body)
		}
		r := awaitRecord(t, s, id)
		if r.RequestedModel != "team-default" || r.ServedModel != "gpt-4o-mini" || r.PriceSource != string(policy.PriceCatalog) || r.CostMicros == 0 {
			t.Errorf("row: requested %s, served %s at %d (%s); want team-default served by gpt-4o-mini (catalog)", r.RequestedModel, r.ServedModel, r.CostMicros, r.PriceSource)
		}
	})

	t.Run("Claude Code's default model through configs/local's pattern", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/messages", strings.NewReader(
			`{"model":"claude-opus-5-5","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("x-api-key", demoKey)
		req.Header.Set("anthropic-version", "2023-06-01")
		req.Header.Set("content-type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		r := awaitRecord(t, s, resp.Header.Get("X-Request-Id"))
		pol, err := policy.Load(s.PolicyDir)
		if err != nil {
			t.Fatal(err)
		}
		price := pol.Resolve("claude-opus-5-5").Model.Price
		if want := price.Micros(rowTokens(r)); r.ServedModel != "claude-opus-5-5" || r.Provider != "anthropic" || r.PriceSource != string(policy.PriceCatalog) || r.CostMicros != want {
			t.Errorf("row: %s/%s at %d (%s); want anthropic/claude-opus-5-5 at %d (catalog)", r.Provider, r.ServedModel, r.CostMicros, r.PriceSource, want)
		}
	})

	t.Run("the model list says which patterns are open", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/v1/models", nil)
		req.Header.Set("Authorization", "Bearer "+demoKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var list struct {
			Data []struct {
				ID      string `json:"id"`
				AliasOf string `json:"alias_of"`
			} `json:"data"`
			Patterns []struct {
				Match string `json:"match"`
				Open  bool   `json:"open"`
			} `json:"patterns"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
			t.Fatal(err)
		}
		open := map[string]bool{}
		for _, p := range list.Patterns {
			open[p.Match] = p.Open
		}
		if !open["future-*"] || open["claude-*"] || len(open) != 6 {
			t.Errorf("patterns %+v: want future-* open and configs/local's five closed", list.Patterns)
		}
		ids := map[string]string{}
		for _, m := range list.Data {
			ids[m.ID] = m.AliasOf
		}
		for id, aliasOf := range map[string]string{"gpt-4o": "", "claude-opus-5-5": "", "gpt-6.2-sol": "", "team-default": "gpt-4o-mini"} {
			if got, ok := ids[id]; !ok || got != aliasOf {
				t.Errorf("%s listed %v, alias_of %q; want alias_of %q", id, ok, got, aliasOf)
			}
		}
	})

	// Last: it closes the pattern for the rest of the stack's life.
	t.Run("the same model under a closed pattern is a 404", func(t *testing.T) {
		closed := strings.Replace(catalogOverlay, `unpriced: worst_case, price_usd_per_mtok: {input: 20, output: 80}`, `unpriced: refuse`, 1)
		if err := s.WritePolicyFile("zz-catalog.yaml", []byte(closed)); err != nil {
			t.Fatal(err)
		}
		var last []byte
		if err := eventually(15*time.Second, func() error {
			status, _, body := post(t, s, demoKey, `{"model":"future-model-1","max_tokens":30,"messages":[{"role":"user","content":"from the future"}]}`)
			last = body
			if status != http.StatusNotFound {
				return errors.New("still served")
			}
			return nil
		}); err != nil {
			t.Fatalf("the closed pattern still serves future-model-1: %s", last)
		}
		var e struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(last, &e) != nil || e.Error.Code != "model_not_found" || !strings.Contains(e.Error.Message, "future-* on provider openai serves only") {
			t.Errorf("404 body %s", last)
		}
	})
}

// lastRequestModel is the model of the last request a simulator received.
func lastRequestModel(t *testing.T, s *stack.Stack, provider string) string {
	t.Helper()
	st, err := s.Sim.Stats(provider)
	if err != nil || len(st.Recent) == 0 {
		t.Fatalf("%s's requests: %d, %v", provider, len(st.Recent), err)
	}
	var body struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal([]byte(st.Recent[len(st.Recent)-1].Body), &body)
	return body.Model
}
