package openai

import (
	"fmt"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/apischema/openaiapi"
)

// typicalRequest is a streamed chat turn of a tool-using assistant: a
// system prompt, some history with one tool round trip, one tool.
const typicalRequest = `{"model":"fast","messages":[` +
	`{"role":"system","content":"You are a terse logistics assistant for a parcel company. Answer in at most three sentences, quote prices in euros, and call get_shipping_quote whenever the user asks about a price or a delivery time. Never invent a price."},` +
	`{"role":"user","content":"How much to send 2.5 kg from Lisbon to Oslo?"},` +
	`{"role":"assistant","content":null,"tool_calls":[{"id":"call_Vb81kQzP3xRm2Lw9","type":"function","function":{"name":"get_shipping_quote","arguments":"{\"origin\":\"Lisbon\",\"destination\":\"Oslo\",\"weight_kg\":2.5}"}}]},` +
	`{"role":"tool","tool_call_id":"call_Vb81kQzP3xRm2Lw9","content":"{\"price_eur\":18.4,\"days\":3}"},` +
	`{"role":"assistant","content":"It costs 18.40 EUR and takes about 3 days."},` +
	`{"role":"user","content":"And to Bergen, same parcel? Is it faster?"}],` +
	`"tools":[{"type":"function","function":{"name":"get_shipping_quote","description":"Price a parcel shipment between two cities.","parameters":{"type":"object","properties":{"origin":{"type":"string"},"destination":{"type":"string"},"weight_kg":{"type":"number"}},"required":["origin","destination","weight_kg"]}}}],` +
	`"tool_choice":"auto","temperature":0.3,"max_tokens":512,"stream":true,"stream_options":{"include_usage":true},"user":"acme-web-17"}`

func BenchmarkRequest(b *testing.B) {
	for _, ct := range []caseTarget{{Kind: "openai"}, {Kind: "openai_compatible", Dialect: "mistral"}} {
		b.Run(ct.Kind+"/"+ct.Dialect, func(b *testing.B) {
			raw := []byte(typicalRequest)
			req, e := openaiapi.ParseChatRequest(raw)
			if e != nil {
				b.Fatal(e)
			}
			t := target(ct)
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, e := NewWithDialect(t, Dialect(ct.Dialect)).Request(req, raw); e != nil {
					b.Fatal(e)
				}
			}
		})
	}
}

// typicalStream is an OpenAI answer of 60 text deltas, its finish and
// usage chunks and [DONE], cut the way Envoy hands it over: a few events
// per piece, with boundaries inside events.
func typicalStream() [][]byte {
	var s strings.Builder
	head := `{"id":"chatcmpl-9xQ2LmN4","object":"chat.completion.chunk","created":1767225600,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_51c2e8a7d0","choices":[{"index":0,"delta":`
	fmt.Fprintf(&s, "data: %s{\"role\":\"assistant\",\"content\":\"\",\"refusal\":null},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n", head)
	for i := range 60 {
		fmt.Fprintf(&s, "data: %s{\"content\":\" word%d\"},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null,\"obfuscation\":\"k3\"}\n\n", head, i)
	}
	fmt.Fprintf(&s, "data: %s{},\"logprobs\":null,\"finish_reason\":\"stop\"}],\"usage\":null}\n\n", head)
	s.WriteString(`data: {"id":"chatcmpl-9xQ2LmN4","object":"chat.completion.chunk","created":1767225600,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_51c2e8a7d0","choices":[],"usage":{"prompt_tokens":311,"completion_tokens":61,"total_tokens":372,"prompt_tokens_details":{"cached_tokens":256,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}` + "\n\n")
	s.WriteString("data: [DONE]\n\n")
	all := []byte(s.String())
	var pieces [][]byte
	for len(all) > 0 {
		n := min(700, len(all))
		pieces = append(pieces, all[:n])
		all = all[n:]
	}
	return pieces
}

// BenchmarkStreamChunk translates one whole typical stream per op, for a
// client that asked for usage and one that did not; ns/event is per
// provider event.
func BenchmarkStreamChunk(b *testing.B) {
	pieces := typicalStream()
	size := 0
	for _, p := range pieces {
		size += len(p)
	}
	for _, tc := range []struct {
		name         string
		ct           caseTarget
		includeUsage bool
	}{
		{"openai/usage", caseTarget{Kind: "openai"}, true},
		{"openai/no-usage", caseTarget{Kind: "openai"}, false},
		{"azure/usage", caseTarget{Kind: "azure_openai", APIVersion: "2024-10-21"}, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			t := target(tc.ct)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				tr := New(t)
				tr.includeUsage = tc.includeUsage
				for i, p := range pieces {
					tr.StreamChunk(p, i == len(pieces)-1)
				}
				if !tr.done {
					b.Fatal("stream did not end with [DONE]")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/64, "ns/event")
		})
	}
}
