package anthropicapi

import "testing"

func TestCachesForAnHour(t *testing.T) {
	t.Parallel()
	const hour = `"cache_control":{"type":"ephemeral","ttl":"1h"}`
	tests := []struct {
		name, body string
		want       bool
	}{
		{name: "no cache_control", body: `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`},
		{name: "the default lifetime", body: `{"model":"m","max_tokens":5,"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],
			"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral","ttl":"5m"}}]}]}`},
		{name: "an hour on the request", body: `{"model":"m","max_tokens":5,` + hour + `,"messages":[{"role":"user","content":"hi"}]}`, want: true},
		{name: "an hour on a system block", body: `{"model":"m","max_tokens":5,"system":[{"type":"text","text":"s",` + hour + `}],"messages":[{"role":"user","content":"hi"}]}`, want: true},
		{name: "an hour on a tool", body: `{"model":"m","max_tokens":5,"tools":[{"name":"t","input_schema":{},` + hour + `}],"messages":[{"role":"user","content":"hi"}]}`, want: true},
		{name: "an hour on a message block", body: `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"hi",` + hour + `}]}]}`, want: true},
		{name: "an hour inside a tool result", body: `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},
			{"role":"assistant","content":[{"type":"tool_use","id":"x","name":"t","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":[{"type":"text","text":"ok",` + hour + `}]}]}]}`, want: true},
		{name: "a lifetime the gateway does not know counts as long", body: `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral","ttl":"24h"}}]}]}`, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, e := ParseMessagesRequest([]byte(tt.body), false)
			if e != nil {
				t.Fatal(e)
			}
			if got := CachesForAnHour(r); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
