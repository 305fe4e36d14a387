package catalog

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
)

const testPolicy = `
providers:
  - {name: oa, kind: openai, base_url: "http://127.0.0.1:1"}
  - {name: an, kind: anthropic, base_url: "http://127.0.0.1:2"}
models:
  - {name: gpt-4o-mini, provider: oa}
  - {match: "claude-*", provider: an, unpriced: worst_case, price_usd_per_mtok: {input: 15, output: 75}}
  - {match: "gpt-*", provider: oa}
aliases:
  - {name: house, to: gpt-4o-mini}
  - {name: pick-for-me, to: auto}
routes:
  - {name: models, path: /v1/models, api: models, filters: [auth, catalog]}
tenants:
  - name: acme
    keys:
      - {name: all, sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08}
      - {name: claude-only, sha256: 8344ba305f5960e08ac7d05fea01b29641b05eab902ba5e23b35b37bd53effec, models: ["claude-*"]}
`

// get asks the catalog filter for path as the key named key.
func get(t *testing.T, p *policy.Policy, key, path string, hdr ...filters.Header) (int, map[string]any) {
	t.Helper()
	f, err := New(policy.FilterRef{Name: "catalog"}, filters.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	x := &filters.Exchange{Policy: p, Route: p.Routes[0], Method: http.MethodGet, Path: path, Header: hdr}
	for _, k := range p.Tenants[0].Keys {
		if k.Name == key {
			x.Caller = filters.Caller{Tenant: k.Tenant, Key: k, KeyName: k.Name}
		}
	}
	if err := f.(*Filter).RequestHeaders(context.Background(), x); err != nil {
		return filters.AsError(err, "").Status, nil
	}
	reply := x.TakeReply()
	var body map[string]any
	if err := json.Unmarshal(reply.Body, &body); err != nil {
		t.Fatal(err)
	}
	return reply.Status, body
}

// ids lists the ids of a list, with what the gateway says of each.
func ids(body map[string]any) []string {
	var out []string
	for _, e := range body["data"].([]any) {
		m := e.(map[string]any)
		id := m["id"].(string)
		if a, ok := m["alias_of"]; ok {
			id += "=" + a.(string)
		}
		if p, ok := m["pattern"]; ok {
			id += "@" + p.(string)
		}
		out = append(out, id)
	}
	return out
}

func TestList(t *testing.T) {
	t.Parallel()
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(testPolicy)}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name         string
		key          string
		anthropic    bool
		wantIDs      string
		wantPatterns string
	}{
		{
			name:         "the policy's models, its aliases, then the catalog's its patterns serve",
			key:          "all",
			wantIDs:      "gpt-4o-mini,house=gpt-4o-mini,pick-for-me=auto,claude-3-5-haiku@claude-*,claude-3-5-sonnet@claude-*,claude-fable-5-1@claude-*,claude-haiku-4-5@claude-*,claude-haiku-5-5@claude-*,claude-opus-5@claude-*,claude-opus-5-5@claude-*,claude-sonnet-5@claude-*,claude-sonnet-5-5@claude-*,gpt-4o@gpt-*,gpt-6-luna@gpt-*,gpt-6.2-astra@gpt-*,gpt-6.2-sol@gpt-*",
			wantPatterns: `[{"match":"claude-*","open":true,"provider":"an","unpriced":"worst_case"},{"match":"gpt-*","open":false,"provider":"oa","unpriced":"refuse"}]`,
		},
		{
			name:         "a key sees what its list allows, in Anthropic's shape",
			key:          "claude-only",
			anthropic:    true,
			wantIDs:      "pick-for-me=auto,claude-3-5-haiku@claude-*,claude-3-5-sonnet@claude-*,claude-fable-5-1@claude-*,claude-haiku-4-5@claude-*,claude-haiku-5-5@claude-*,claude-opus-5@claude-*,claude-opus-5-5@claude-*,claude-sonnet-5@claude-*,claude-sonnet-5-5@claude-*",
			wantPatterns: `[{"match":"claude-*","open":true,"provider":"an","unpriced":"worst_case"}]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hdr []filters.Header
			if tt.anthropic {
				hdr = append(hdr, filters.Header{Key: "anthropic-version", Value: "2023-06-01"})
			}
			status, body := get(t, p, tt.key, "/v1/models", hdr...)
			if status != http.StatusOK {
				t.Fatalf("status %d", status)
			}
			if got := strings.Join(ids(body), ","); got != tt.wantIDs {
				t.Errorf("ids\n got %s\nwant %s", got, tt.wantIDs)
			}
			// Read back as a map, so its keys come sorted.
			if got, _ := json.Marshal(body["patterns"]); string(got) != tt.wantPatterns {
				t.Errorf("patterns %s, want %s", got, tt.wantPatterns)
			}
			if _, paged := body["has_more"]; paged != tt.anthropic {
				t.Errorf("has_more present %v, want %v (Anthropic's page)", paged, tt.anthropic)
			}
		})
	}
}

func TestOne(t *testing.T) {
	t.Parallel()
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(testPolicy)}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, key, model string
		wantStatus       int
		wantOwner        string
	}{
		{name: "a model released tomorrow under an open pattern", key: "all", model: "claude-opus-6", wantStatus: 200, wantOwner: "an"},
		{name: "an unknown name under a closed pattern", key: "all", model: "gpt-9-ultra", wantStatus: 404},
		{name: "an alias", key: "all", model: "house", wantStatus: 200, wantOwner: "oa"},
		{name: "outside the key's list", key: "claude-only", model: "gpt-6.2-sol", wantStatus: 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := get(t, p, tt.key, "/v1/models/"+tt.model)
			if status != tt.wantStatus {
				t.Fatalf("status %d, want %d", status, tt.wantStatus)
			}
			if status == 200 && (body["id"] != tt.model || body["owned_by"] != tt.wantOwner) {
				t.Errorf("entry %v, want %s owned by %s", body, tt.model, tt.wantOwner)
			}
		})
	}
}
