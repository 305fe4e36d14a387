package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/redis/go-redis/v9"

	"github.com/switchyard/switchyard/stack"
	"github.com/switchyard/switchyard/state/ledger"
	"github.com/switchyard/switchyard/state/store"
)

// streamedResponse is what a Responses stream gave the client: the event
// types in order (repeats of one type folded), and the response that
// response.completed carried.
type streamedResponse struct {
	types []string
	final responses.Response
}

// readResponseStream reads a Responses stream to its end, failing t unless
// the sequence numbers run 0, 1, 2… without a gap.
func readResponseStream(t *testing.T, c openai.Client, params responses.ResponseNewParams, opts ...option.RequestOption) streamedResponse {
	t.Helper()
	stream := c.Responses.NewStreaming(context.Background(), params, opts...)
	var got streamedResponse
	var seq int64
	for stream.Next() {
		ev := stream.Current()
		if ev.SequenceNumber != seq {
			t.Fatalf("event %s has sequence_number %d, want %d", ev.Type, ev.SequenceNumber, seq)
		}
		seq++
		if n := len(got.types); n == 0 || got.types[n-1] != ev.Type {
			got.types = append(got.types, ev.Type)
		}
		if ev.Type == "response.completed" {
			got.final = ev.AsResponseCompleted().Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	return got
}

// TestResponsesEveryProvider: an openai-go client of the Responses API
// gets answers, whole and streamed with the Responses event sequence, from
// a model of every provider kind.
func TestResponsesEveryProvider(t *testing.T) {
	s := allKinds(t)
	forEachKind(t, func(t *testing.T, model, provider string) {
		c := client(s, demoKey)
		var resp *http.Response
		got, err := c.Responses.New(context.Background(), responses.ResponseNewParams{
			Model:           model,
			Instructions:    openai.String("You are terse."),
			Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String("hello responses")},
			MaxOutputTokens: openai.Int(200),
			Store:           openai.Bool(false),
		}, option.WithResponseInto(&resp))
		if err != nil {
			t.Fatalf("responses: %v", err)
		}
		if p := resp.Header.Get("x-switchyard-provider"); p != provider {
			t.Errorf("served by %q, want %q", p, provider)
		}
		// OpenAI's own answer passes through as it came, naming the model
		// as OpenAI does; a translated one names the client's.
		wantModel := model
		if provider == "oa" {
			wantModel = "gpt-4o-mini-2024-07-18"
		}
		if got.Object != "response" || got.Status != responses.ResponseStatusCompleted || got.Model != wantModel || !strings.HasPrefix(got.ID, "resp_") {
			t.Errorf("object %q status %q model %q id %q; want a completed response of %s", got.Object, got.Status, got.Model, got.ID, wantModel)
		}
		if !strings.Contains(got.OutputText(), "hello responses") {
			t.Errorf("output text %q; want the simulator's echo", got.OutputText())
		}
		if got.Usage.InputTokens == 0 || got.Usage.OutputTokens == 0 || got.Usage.TotalTokens != got.Usage.InputTokens+got.Usage.OutputTokens {
			t.Errorf("usage %+v; want both counts and their total", got.Usage)
		}

		sr := readResponseStream(t, c, responses.ResponseNewParams{
			Model: model,
			Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
				responses.ResponseInputItemParamOfMessage("stream to me", responses.EasyInputMessageRoleUser),
			}},
		}, option.WithResponseInto(&resp))
		want := "response.created response.in_progress response.output_item.added response.content_part.added response.output_text.delta " +
			"response.output_text.done response.content_part.done response.output_item.done response.completed"
		if got := strings.Join(sr.types, " "); got != want {
			t.Errorf("event sequence %q, want %q", got, want)
		}
		if !strings.Contains(resp.Header.Get("Content-Type"), "text/event-stream") {
			t.Errorf("content-type %q", resp.Header.Get("Content-Type"))
		}
		if !strings.Contains(sr.final.OutputText(), "stream to me") || sr.final.Status != responses.ResponseStatusCompleted {
			t.Errorf("completed response %q, status %q", sr.final.OutputText(), sr.final.Status)
		}
		if sr.final.Usage.InputTokens == 0 || sr.final.Usage.OutputTokens == 0 {
			t.Errorf("streamed usage %+v; want both counts", sr.final.Usage)
		}
	})
}

// TestResponsesFunctionToolRoundTrip: a function call and its output, in
// the Responses API's function_call and function_call_output items,
// through every provider kind, streamed and not.
func TestResponsesFunctionToolRoundTrip(t *testing.T) {
	s := allKinds(t)
	tools := []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{
		Name: "get_weather", Description: openai.String("Weather of a city."),
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}},
		Strict:     openai.Bool(false),
	}}}
	forEachKind(t, func(t *testing.T, model, provider string) {
		c := client(s, demoKey)
		ask := responses.ResponseInputItemParamOfMessage("weather in Oslo?", responses.EasyInputMessageRoleUser)
		for _, streamed := range []bool{false, true} {
			params := responses.ResponseNewParams{Model: model, Tools: tools, Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{ask}}}
			var call responses.Response
			if streamed {
				sr := readResponseStream(t, c, params)
				if !strings.Contains(strings.Join(sr.types, " "), "response.output_item.added response.function_call_arguments.delta response.function_call_arguments.done response.output_item.done") {
					t.Errorf("streamed events %v carry no function call", sr.types)
				}
				call = sr.final
			} else {
				r, err := c.Responses.New(context.Background(), params)
				if err != nil {
					t.Fatalf("function call: %v", err)
				}
				call = *r
			}
			var fc responses.ResponseFunctionToolCall
			for _, item := range call.Output {
				if item.Type == "function_call" {
					fc = item.AsFunctionCall()
				}
			}
			var args map[string]any
			if fc.Name != "get_weather" || fc.CallID == "" || json.Unmarshal([]byte(fc.Arguments), &args) != nil {
				t.Fatalf("streamed=%v: output %s; want a get_weather function_call with JSON arguments", streamed, call.RawJSON())
			}
			output := responses.ResponseInputItemParamOfFunctionCallOutput("sunny, 21C")
			output.OfFunctionCallOutput.CallID = openai.String(fc.CallID)
			params.Input.OfInputItemList = append(params.Input.OfInputItemList,
				responses.ResponseInputItemParamOfFunctionCall(fc.Arguments, fc.CallID, fc.Name), output)
			answer, err := c.Responses.New(context.Background(), params)
			if err != nil {
				t.Fatalf("streamed=%v: function call output: %v", streamed, err)
			}
			if !strings.Contains(answer.OutputText(), "sunny, 21C") {
				t.Errorf("streamed=%v: answer to the function call output %s", streamed, answer.RawJSON())
			}
		}
	})
}

// TestResponsesStatefulRefused: what needs a stored response is refused
// with a 400 in OpenAI's envelope that names the parameter and says why,
// before any provider is called.
func TestResponsesStatefulRefused(t *testing.T) {
	t.Parallel()
	c := client(shared, demoKey)
	tests := []struct {
		name   string
		params responses.ResponseNewParams
		param  string
	}{
		{"previous_response_id", responses.ResponseNewParams{Model: "gpt-4o-mini", PreviousResponseID: openai.String("resp_123"),
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("and then?")}}, "previous_response_id"},
		{"store true", responses.ResponseNewParams{Model: "gpt-4o-mini", Store: openai.Bool(true),
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("keep this")}}, "store"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := c.Responses.New(context.Background(), tt.params)
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest {
				t.Fatalf("err = %v, want a 400", err)
			}
			if apiErr.Param != tt.param || apiErr.Code != "unsupported_parameter" || apiErr.Type != "invalid_request_error" || !strings.Contains(apiErr.Message, "keeps no responses") {
				t.Errorf("error param %q code %q type %q message %q", apiErr.Param, apiErr.Code, apiErr.Type, apiErr.Message)
			}
		})
	}
}

// TestAgentRoutesAccountedLikeChat: a Responses or Messages request, whole
// or streamed, is a ledger row of its route with the tokens its client was
// told and a price, is charged to its key's budget to the micro-dollar,
// and is in the audit trail, as a chat request is; and the model list a
// Responses client reads is OpenAI's.
func TestAgentRoutesAccountedLikeChat(t *testing.T) {
	t.Parallel()
	s := shared
	code, b := admin(t, s, http.MethodPost, "/admin/keys", `{"tenant":"demo","name":"e2e-responses","budget_usd":{"daily":1}}`)
	if code != http.StatusCreated {
		t.Fatalf("issuing a key: %d %s", code, b)
	}
	var issued struct{ Key string }
	if err := json.Unmarshal(b, &issued); err != nil || issued.Key == "" {
		t.Fatalf("issued %s", b)
	}
	c := client(s, issued.Key)

	type sent struct {
		id, route     string
		stream        bool
		input, output int64
	}
	var all []sent
	var resp *http.Response
	whole, err := c.Responses.New(context.Background(), responses.ResponseNewParams{
		Model: "gpt-4o-mini", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("count me")},
	}, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	all = append(all, sent{resp.Header.Get("X-Request-Id"), "responses", false, whole.Usage.InputTokens, whole.Usage.OutputTokens})
	sr := readResponseStream(t, c, responses.ResponseNewParams{
		Model: "claude-3-5-haiku", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("count me streamed")},
	}, option.WithResponseInto(&resp))
	all = append(all, sent{resp.Header.Get("X-Request-Id"), "responses", true, sr.final.Usage.InputTokens, sr.final.Usage.OutputTokens})

	ac := anthropicClient(s, issued.Key)
	msg, err := ac.Messages.New(context.Background(), anthropic.MessageNewParams{
		Model: "gpt-4o-mini", MaxTokens: 100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("count this message"))},
	}, anthropicopt.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	all = append(all, sent{resp.Header.Get("X-Request-Id"), "messages", false, msg.Usage.InputTokens, msg.Usage.OutputTokens})
	stream := ac.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{
		Model: "claude-3-5-haiku", MaxTokens: 100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("count this stream"))},
	}, anthropicopt.WithResponseInto(&resp))
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	all = append(all, sent{resp.Header.Get("X-Request-Id"), "messages", true, acc.Usage.InputTokens, acc.Usage.OutputTokens})

	var rows map[string]ledger.Record
	if err := eventually(15*time.Second, func() error {
		rows = ledgerRecords(t, s)
		for _, r := range all {
			if _, ok := rows[r.id]; !ok {
				return errNotYet
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("the Responses requests never reached the ledger: %v", err)
	}
	var billed int64
	for _, r := range all {
		row := rows[r.id]
		if row.Route != r.route || row.Tenant != "demo" || row.KeyName != "e2e-responses" || row.Status != http.StatusOK || row.Stream != r.stream ||
			row.InputTokens != r.input || row.OutputTokens != r.output || row.CostMicros <= 0 || row.ServedModel == "" {
			t.Errorf("ledger row %+v; want route %s, the key, status 200, stream %v, %d and %d tokens and a price", row, r.route, r.stream, r.input, r.output)
		}
		billed += row.CostMicros
	}

	rc := redis.NewClient(&redis.Options{Addr: s.RedisAddr})
	defer rc.Close()
	line := store.BudgetLine{Scope: store.Scope{Tenant: "demo", Key: "e2e-responses"}, Period: store.Daily, Limit: 1_000_000}
	var budget store.BudgetState
	if err := eventually(30*time.Second, func() error {
		budget, err = store.NewRedis(rc, store.Options{}).Budget(context.Background(), line)
		if err != nil || budget.Reserved != 0 || budget.Spent != billed {
			return errNotYet
		}
		return nil
	}); err != nil {
		t.Errorf("the key's budget has %d micro-USD spent and %d reserved, the ledger bills %d", budget.Spent, budget.Reserved, billed)
	}

	for _, r := range all {
		events := logLines(s, "extproc-0", func(m map[string]any) bool {
			return m["kind"] == "audit" && m["msg"] == "request" && m["request_id"] == r.id
		})
		if len(events) != 1 || events[0]["route"] != r.route || events[0]["key"] != "e2e-responses" || events[0]["prompt_sha256"] == "" {
			t.Errorf("audit events of %s: %v; want one of route %s", r.id, events, r.route)
		}
	}

	models, err := c.Models.List(context.Background())
	if err != nil || len(models.Data) == 0 || models.Data[0].Object != "model" {
		t.Errorf("models for a Responses client: %v, %v", models, err)
	}
}

// codexTurn is what one streamed turn gave the client: its request id,
// the event types in order, and the response that response.completed
// carried.
type codexTurn struct {
	id     string
	types  []string
	output []map[string]any
	usage  map[string]any
}

// codexReplay sends body as Codex sent its request f and reads the
// stream, failing t unless it ends with response.completed.
func codexReplay(t *testing.T, s *stack.Stack, f fixture, body []byte) codexTurn {
	t.Helper()
	a := f.send(t, s, body)
	a.answered(t, f)
	var ev struct {
		Response struct {
			Output []map[string]any `json:"output"`
			Usage  map[string]any   `json:"usage"`
		} `json:"response"`
	}
	if err := json.Unmarshal(a.last, &ev); err != nil {
		t.Fatalf("response.completed %s: %v", a.last, err)
	}
	return codexTurn{id: a.id, types: a.events, output: ev.Response.Output, usage: ev.Response.Usage}
}

// call is the function call the turn's answer made, as Codex sends it
// back with its output in the next turn's input.
func (turn codexTurn) call(t *testing.T) (call map[string]any, output map[string]any) {
	t.Helper()
	for _, it := range turn.output {
		if it["type"] == "function_call" {
			call = map[string]any{"type": "function_call", "name": it["name"], "arguments": it["arguments"], "call_id": it["call_id"]}
			if ns, ok := it["namespace"]; ok {
				call["namespace"] = ns
			}
			return call, map[string]any{"type": "function_call_output", "call_id": it["call_id"], "output": "hi from the tool"}
		}
	}
	t.Fatalf("the answer %v made no function call", turn.output)
	return nil, nil
}

// withInput is body with items appended to its input, re-encoded.
func withInput(t *testing.T, body []byte, items ...map[string]any) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		m["input"] = append(m["input"].([]any), it)
	}
	b, _ := json.Marshal(m)
	return b
}

// namespaceFirst is body with its namespace tool moved to the front, so
// that the simulated model, which calls the first tool offered, calls a
// function of the namespace.
func namespaceFirst(t *testing.T, body []byte) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	tools := m["tools"].([]any)
	for i, tl := range tools {
		if tl.(map[string]any)["type"] == "namespace" {
			m["tools"] = append([]any{tl}, append(tools[:i:i], tools[i+1:]...)...)
			b, _ := json.Marshal(m)
			return b
		}
	}
	t.Fatal("the request has no namespace tool")
	return nil
}

// TestCodexDefaultsEveryKind replays Codex CLI 0.171's first request, with
// its default tools (a namespace of sub-agent functions, web_search),
// include, reasoning, prompt_cache_key and client_metadata, through Envoy
// to an OpenAI model (passed through: OpenAI gets the body as Codex sent
// it but for the output cap the gateway reserved for), an Anthropic and a
// Gemini model (translated). Each streams a Responses answer whose
// function call, and a call to a function of the namespace, Codex can
// send back with its output in the next turn; each turn is a ledger row.
func TestCodexDefaultsEveryKind(t *testing.T) {
	t.Parallel()
	codex := loadFixture(t, filepath.Join("codex-0.171.0-say-hi", "000.json"))
	for _, k := range []struct{ model, provider string }{
		{"gpt-4o-mini", "openai"}, {"claude-3-5-haiku", "anthropic"}, {"gemini-2.0-flash", "gemini"},
	} {
		t.Run(k.model, func(t *testing.T) {
			t.Parallel()
			body := codex.withModel(t, k.model)
			var ids []string
			for _, first := range [][]byte{body, namespaceFirst(t, body)} {
				turn := codexReplay(t, shared, codex, first)
				call, output := turn.call(t)
				if bytes.Equal(first, body) && call["name"] != "exec_command" || !bytes.Equal(first, body) && (call["name"] != "close_agent" || call["namespace"] != "multi_agent_v1") {
					t.Errorf("first turn called %v", call)
				}
				next := codexReplay(t, shared, codex, withInput(t, first, call, output))
				var text strings.Builder
				for _, it := range next.output {
					for _, c := range it["content"].([]any) {
						text.WriteString(c.(map[string]any)["text"].(string))
					}
				}
				if !strings.Contains(text.String(), "Tool result received: hi from the tool") {
					t.Errorf("the second turn answered %v", next.output)
				}
				ids = append(ids, turn.id, next.id)
			}
			bodies := recentBodies(t, k.provider)
			if k.provider == "openai" {
				// Codex sends no max_output_tokens and offers web search
				// with no max_tool_calls: the gateway writes the model's
				// default cap and the searches it reserved the budget for.
				want := strings.TrimSuffix(string(body), "}") + `,"max_output_tokens":4096,"max_tool_calls":10}`
				if !slices.ContainsFunc(bodies, func(b string) bool { return b == want }) {
					t.Error("OpenAI did not get Codex's body as it was sent, but for the output cap and the search bound")
				}
			} else if slices.ContainsFunc(bodies, func(b string) bool { return strings.Contains(b, "external_web_access") }) ||
				!slices.ContainsFunc(bodies, func(b string) bool { return strings.Contains(b, `"close_agent"`) }) {
				t.Errorf("%s was offered web_search, or not the namespace's functions", k.provider)
			}
			var rows map[string]ledger.Record
			if err := eventually(15*time.Second, func() error {
				rows = ledgerRecords(t, shared)
				for _, id := range ids {
					if _, ok := rows[id]; !ok {
						return errNotYet
					}
				}
				return nil
			}); err != nil {
				t.Fatalf("the turns never reached the ledger: %v", err)
			}
			for _, id := range ids {
				if r := rows[id]; r.Route != "responses" || r.Tenant != "demo" || r.Provider != k.provider || !r.Stream || r.InputTokens == 0 || r.OutputTokens == 0 || r.CostMicros <= 0 {
					t.Errorf("ledger row %+v; want a priced, streamed responses row of %s", r, k.provider)
				}
			}
		})
	}
}

// recentBodies are the bodies of the last requests provider got.
func recentBodies(t *testing.T, provider string) []string {
	t.Helper()
	st, err := shared.Sim.Stats(provider)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range st.Recent {
		out = append(out, r.Body)
	}
	return out
}
