package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/state/ledger"
)

func testPolicy() *policy.Policy {
	anth := &policy.Provider{Name: "anthropic", Kind: policy.KindAnthropic}
	oa := &policy.Provider{Name: "openai", Kind: policy.KindOpenAI}
	return &policy.Policy{
		Providers: []*policy.Provider{anth, oa},
		Models:    []*policy.Model{{Name: "claude-3-5-haiku", Provider: anth}, {Name: "gpt-4o-mini", Provider: oa}},
		Routes: []*policy.Route{
			{Name: "chat", API: policy.APIChatCompletions}, {Name: "messages", API: policy.APIMessages},
			{Name: "count_tokens", API: policy.APICountTokens}, {Name: "models", API: policy.APIModels},
		},
	}
}

func line(id, route string, status int) accessLine {
	l := accessLine{RequestID: id, Method: "POST", Path: "/v1/" + route, Status: status}
	l.Switchyard.Route = route
	return l
}

func row(id, route, model, provider string, cost int64) ledger.Record {
	return ledger.Record{RequestID: id, Tenant: demoTenant, App: demoApp, Route: route, RequestedModel: model, ServedModel: model, Provider: provider, Status: 200, CostMicros: cost}
}

func TestAccount(t *testing.T) {
	served := row("a", "messages", "claude-3-5-haiku", "anthropic", 10)
	tests := []struct {
		name         string
		api          policy.API
		model        string
		lines        []accessLine
		rows         []ledger.Record
		wantMatched  int
		wantProblems []string
	}{
		{
			name: "every request a priced row of the demo tenant", api: policy.APIMessages, model: "claude-3-5-haiku",
			lines: []accessLine{line("a", "messages", 200), line("b", "count_tokens", 200), {RequestID: "c", Method: "GET", Path: "/v1/models", Status: 200}},
			rows:  []ledger.Record{served, row("b", "count_tokens", "claude-3-5-haiku", "anthropic", 0)},
			// The model list is a request but no row; a count is free.
			wantMatched: 2,
		},
		{
			name: "a metered request without its row", api: policy.APIMessages, model: "claude-3-5-haiku",
			lines:        []accessLine{line("a", "messages", 200), line("b", "messages", 200)},
			rows:         []ledger.Record{served},
			wantMatched:  1,
			wantProblems: []string{"POST /v1/messages has no ledger row"},
		},
		{
			name: "a refusal", api: policy.APIMessages,
			lines:        []accessLine{func() accessLine { l := line("a", "messages", 404); l.Details = "model_not_found"; return l }()},
			rows:         []ledger.Record{{RequestID: "a", Tenant: demoTenant, App: demoApp, Route: "messages", RequestedModel: "claude-opus-5-5", Status: 404}},
			wantMatched:  1,
			wantProblems: []string{"POST /v1/messages answered 404 model_not_found"},
		},
		{
			name: "another tenant, another API, unpriced, a fallback", api: policy.APIChatCompletions, model: "claude-3-5-haiku",
			lines: []accessLine{line("a", "messages", 200)},
			rows: []ledger.Record{{RequestID: "a", Tenant: "team", App: "web", Route: "messages", RequestedModel: "claude-3-5-haiku",
				ServedModel: "gpt-4o-mini", Provider: "openai", Status: 200}},
			wantMatched: 1,
			wantProblems: []string{
				`row of tenant "team" app "web", want demo/demo`,
				`row of route "messages", not one of the chat_completions API`,
				"claude-3-5-haiku was served by gpt-4o-mini",
				"a served messages row costs nothing",
			},
		},
		{
			name: "a provider the policy does not give the model", api: policy.APIMessages, model: "claude-3-5-haiku",
			lines:        []accessLine{line("a", "messages", 200)},
			rows:         []ledger.Record{row("a", "messages", "claude-3-5-haiku", "openai", 10)},
			wantMatched:  1,
			wantProblems: []string{`served by "claude-3-5-haiku" on provider "openai", which the policy does not pair`},
		},
		{
			name: "a row of no request of the run", api: policy.APIMessages, model: "claude-3-5-haiku",
			rows:         []ledger.Record{served},
			wantProblems: []string{"ledger row a (messages) of no request of this run"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows := map[string]ledger.Record{}
			for _, r := range tt.rows {
				rows[r.RequestID] = r
			}
			matched, problems := account(testPolicy(), tt.api, tt.model, tt.lines, rows)
			if matched != tt.wantMatched {
				t.Errorf("matched %d rows, want %d", matched, tt.wantMatched)
			}
			if diff := cmp.Diff(tt.wantProblems, problems); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTarget(t *testing.T) {
	rows := map[string]ledger.Record{"a": {RequestedModel: "claude-opus-5-5"}, "b": {RequestedModel: "claude-haiku-4-5"}, "c": {RequestedModel: "claude-opus-5-5"}}
	tests := []struct {
		model string
		rows  map[string]ledger.Record
		want  string
	}{
		{"gpt-4o-mini", nil, "openai / gpt-4o-mini"},
		{"gpt-9", nil, "? / gpt-9"},
		{"", rows, "default model (claude-haiku-4-5, claude-opus-5-5)"},
		{"", nil, "default model"},
	}
	for _, tt := range tests {
		if got := target(testPolicy(), tt.model, tt.rows); got != tt.want {
			t.Errorf("target(%q) = %q, want %q", tt.model, got, tt.want)
		}
	}
}
