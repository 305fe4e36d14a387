package e2e

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/state/ledger"
)

// rowTokens are a ledger row's counts, for a request that wrote nothing to
// the provider's prompt cache: the row does not count writes apart.
func rowTokens(r ledger.Record) policy.Tokens {
	return policy.Tokens{Prompt: int(r.InputTokens), CacheRead: int(r.CachedTokens), Completion: int(r.OutputTokens)}
}

// TestCacheWritesAreCharged: a Messages request marking its prompt for
// Anthropic's cache, as Claude Code's every request does, is charged for
// what Anthropic reports writing there at the write rates of claude-opus-5-5
// (5 minutes $5, an hour $8 per million tokens, against $4 for input),
// each lifetime at its own, whole and streamed. The simulator reads half
// the prompt from the cache and writes a quarter: half of the writes for
// an hour when some marks ask for one.
func TestCacheWritesAreCharged(t *testing.T) {
	t.Parallel()
	pol, err := policy.Load(shared.PolicyDir)
	if err != nil {
		t.Fatal(err)
	}
	price := pol.Resolve("claude-opus-5-5").Model.Price
	const (
		hour    = `"cache_control":{"type":"ephemeral","ttl":"1h"}`
		fiveMin = `"cache_control":{"type":"ephemeral"}`
	)
	tests := []struct {
		name, system, message string
		stream                bool
		wantHour              bool
	}{
		{name: "whole, an hour and 5 minutes", system: hour, message: fiveMin, wantHour: true},
		{name: "streamed, an hour and 5 minutes", system: hour, message: fiveMin, stream: true, wantHour: true},
		{name: "streamed, 5 minutes", system: fiveMin, message: fiveMin, stream: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body := `{"model":"claude-opus-5-5","max_tokens":64,"stream":` + strconv.FormatBool(tt.stream) + `,` +
				`"system":[{"type":"text","text":"A long and stable system prompt that Claude Code would send on every turn of a session.",` + tt.system + `}],` +
				`"messages":[{"role":"user","content":[{"type":"text","text":"What changed in the repository since this morning?",` + tt.message + `}]}]}`
			resp, b := postMessages(t, body, nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			u := reportedUsage(t, b)
			prompt := u.InputTokens + u.CacheRead + u.CacheWrite
			wantHour := 0
			if tt.wantHour {
				wantHour = prompt / 4 / 2
			}
			if u.CacheRead != prompt/2 || u.CacheWrite != prompt/4 || u.CacheCreation.Hour != wantHour || u.CacheCreation.FiveMin+u.CacheCreation.Hour != u.CacheWrite || u.CacheWrite == 0 {
				t.Fatalf("Anthropic reported %+v; want half of %d read, a quarter written, %d of it for an hour", u, prompt, wantHour)
			}
			r := awaitRecord(t, shared, resp.Header.Get("x-request-id"))
			want := price.Micros(policy.Tokens{Prompt: prompt, CacheRead: u.CacheRead, CacheWrite: u.CacheCreation.FiveMin,
				CacheWrite1h: u.CacheCreation.Hour, Completion: u.OutputTokens})
			if r.InputTokens != int64(prompt) || r.CachedTokens != int64(u.CacheRead) || r.OutputTokens != int64(u.OutputTokens) || r.CostMicros != want {
				t.Errorf("row: %d in (%d cached), %d out, %d µUSD; want %d in (%d cached), %d out, %d µUSD",
					r.InputTokens, r.CachedTokens, r.OutputTokens, r.CostMicros, prompt, u.CacheRead, u.OutputTokens, want)
			}
			if asInput := price.Micros(rowTokens(r)); want <= asInput {
				t.Errorf("the writes' price %d is not above the same tokens as plain input (%d)", want, asInput)
			}
		})
	}
}

// anthropicUsage is the usage of a Messages answer.
type anthropicUsage struct {
	InputTokens   int `json:"input_tokens"`
	OutputTokens  int `json:"output_tokens"`
	CacheRead     int `json:"cache_read_input_tokens"`
	CacheWrite    int `json:"cache_creation_input_tokens"`
	CacheCreation struct {
		FiveMin int `json:"ephemeral_5m_input_tokens"`
		Hour    int `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
}

// reportedUsage is the usage of a Messages answer, whole or streamed: a
// stream's message_start carries the prompt's counts, its last
// message_delta the output's.
func reportedUsage(t *testing.T, body string) anthropicUsage {
	t.Helper()
	var u anthropicUsage
	if !strings.HasPrefix(body, "event:") {
		var msg struct {
			Usage anthropicUsage `json:"usage"`
		}
		if err := json.Unmarshal([]byte(body), &msg); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		return msg.Usage
	}
	for _, line := range strings.Split(body, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type    string `json:"type"`
			Message struct {
				Usage anthropicUsage `json:"usage"`
			} `json:"message"`
			Usage *anthropicUsage `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("%v: %s", err, data)
		}
		switch ev.Type {
		case "message_start":
			u = ev.Message.Usage
		case "message_delta":
			if ev.Usage != nil {
				u.OutputTokens = ev.Usage.OutputTokens
			}
		}
	}
	return u
}
