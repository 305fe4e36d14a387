package gemini

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/translator"
)

// TestCounter: a token count goes to models.countTokens as a whole
// generateContentRequest naming its model, and comes back as Anthropic's
// {"input_tokens": N} — the count generateContent's usage gives the same
// prompt — or as an error in Anthropic's envelope.
func TestCounter(t *testing.T) {
	sim := startSim(t)
	const body = `{"model":"flash","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"How many tokens is this?"}],
		"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]}`
	req, e := openaiapi.ParseChatRequest([]byte(body))
	if e != nil {
		t.Fatal(e)
	}

	c := NewCounter(simTarget(simKey))
	up, e := c.Request(req, nil)
	if e != nil {
		t.Fatal(e)
	}
	var sent struct {
		GenerateContentRequest struct {
			Model             string            `json:"model"`
			Contents          []json.RawMessage `json:"contents"`
			SystemInstruction json.RawMessage   `json:"systemInstruction"`
			Tools             []json.RawMessage `json:"tools"`
		} `json:"generateContentRequest"`
	}
	if !strings.HasSuffix(up.Path, "/v1beta/models/gemini-2.5-flash:countTokens") || json.Unmarshal(up.Body, &sent) != nil ||
		sent.GenerateContentRequest.Model != "models/gemini-2.5-flash" || len(sent.GenerateContentRequest.Contents) != 1 ||
		sent.GenerateContentRequest.SystemInstruction == nil || len(sent.GenerateContentRequest.Tools) != 1 {
		t.Fatalf("sent %s %s; want the whole generateContentRequest to countTokens", up.Path, up.Body)
	}
	status, h, answer := post(t, sim, up)
	r := c.Complete(status, h, answer)
	var count struct {
		InputTokens *int `json:"input_tokens"`
	}
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &count) != nil || count.InputTokens == nil {
		t.Fatalf("got %d %s; want Anthropic's token count", r.Status, r.Body)
	}
	gen, _ := chat(t, sim, simKey, body)
	var completion openaiapi.ChatCompletion
	if err := json.Unmarshal(gen.Body, &completion); err != nil || completion.Usage == nil || completion.Usage.PromptTokens != *count.InputTokens {
		t.Errorf("counted %d tokens; generateContent's usage is %s", *count.InputTokens, gen.Body)
	}

	tests := []struct {
		name       string
		status     int
		body       string
		wantStatus int
		wantType   string
	}{
		{name: "not a count", status: 200, body: `{"candidates":[]}`, wantStatus: http.StatusBadGateway, wantType: "api_error"},
		{name: "rate limited", status: 429, body: `{"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED"}}`, wantStatus: http.StatusTooManyRequests, wantType: "rate_limit_error"},
		{name: "key refused", status: 400, body: `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}}`, wantStatus: http.StatusBadGateway, wantType: "api_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewCounter(simTarget(simKey)).Complete(tt.status, translator.Headers{{Key: "content-type", Value: "application/json"}}, []byte(tt.body))
			var env struct {
				Type  string `json:"type"`
				Error struct{ Type, Message string }
			}
			if r.Status != tt.wantStatus || json.Unmarshal(r.Body, &env) != nil || env.Type != "error" || env.Error.Type != tt.wantType || env.Error.Message == "" {
				t.Errorf("got %d %s; want %d in Anthropic's envelope, type %s", r.Status, r.Body, tt.wantStatus, tt.wantType)
			}
		})
	}
}
