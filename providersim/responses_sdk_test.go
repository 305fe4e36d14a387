package providersim_test

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/switchyard/switchyard/providersim"
)

// TestResponsesSDK: openai-go's Responses client reads the simulator's
// answers, whole and streamed (its accumulator included): text, a call to
// a namespace's function with the namespace beside its name, the answer
// to its output, and a web search before a text answer.
func TestResponsesSDK(t *testing.T) {
	sim, _ := startKind(t, providersim.KindOpenAI)
	client := openai.NewClient(option.WithBaseURL(sim.URL("openai")+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	spaces := responses.ToolUnionParam{OfNamespace: &responses.NamespaceToolParam{
		Name: "multi_agent_v1", Description: "Sub-agents.",
		Tools: []responses.NamespaceToolToolUnionParam{{OfFunction: &responses.NamespaceToolToolFunctionParam{
			Name:       "spawn_agent",
			Parameters: map[string]any{"type": "object", "properties": map[string]any{"message": map[string]any{"type": "string"}}, "required": []string{"message"}},
		}}},
	}}
	search := responses.ToolUnionParam{OfWebSearch: &responses.WebSearchToolParam{Type: responses.WebSearchToolTypeWebSearch}}
	input := func(items ...responses.ResponseInputItemUnionParam) responses.ResponseNewParamsInputUnion {
		return responses.ResponseNewParamsInputUnion{OfInputItemList: items}
	}
	ask := responses.ResponseInputItemParamOfMessage("start an agent", responses.EasyInputMessageRoleUser)
	for _, streamed := range []bool{false, true} {
		get := func(params responses.ResponseNewParams) responses.Response {
			t.Helper()
			if !streamed {
				r, err := client.Responses.New(context.Background(), params)
				if err != nil {
					t.Fatalf("streamed=%v: %v", streamed, err)
				}
				return *r
			}
			stream := client.Responses.NewStreaming(context.Background(), params)
			var final responses.Response
			var seq int64
			for stream.Next() {
				ev := stream.Current()
				if ev.SequenceNumber != seq {
					t.Fatalf("event %s numbered %d, want %d", ev.Type, ev.SequenceNumber, seq)
				}
				seq++
				if ev.Type == "response.completed" {
					final = ev.AsResponseCompleted().Response
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatalf("stream: %v", err)
			}
			return final
		}
		text := get(responses.ResponseNewParams{Model: "gpt-4o-mini", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hello there")}})
		if !strings.Contains(text.OutputText(), "Hello from gpt-4o-mini: hello there") || text.Usage.InputTokens == 0 || text.Status != "completed" {
			t.Errorf("streamed=%v: text answer %s", streamed, text.RawJSON())
		}
		called := get(responses.ResponseNewParams{Model: "gpt-4o-mini", Tools: []responses.ToolUnionParam{spaces, search}, Input: input(ask)})
		if len(called.Output) != 1 {
			t.Fatalf("streamed=%v: output %s", streamed, called.RawJSON())
		}
		fc := called.Output[0].AsFunctionCall()
		if fc.Name != "spawn_agent" || fc.Namespace != "multi_agent_v1" || fc.Arguments != `{"message":"x"}` {
			t.Fatalf("streamed=%v: call %s; want spawn_agent of multi_agent_v1", streamed, called.Output[0].RawJSON())
		}
		call := responses.ResponseInputItemParamOfFunctionCall(fc.Arguments, fc.CallID, fc.Name)
		call.OfFunctionCall.Namespace = openai.String(fc.Namespace)
		output := responses.ResponseInputItemParamOfFunctionCallOutput("agent a-1 runs")
		output.OfFunctionCallOutput.CallID = openai.String(fc.CallID)
		answered := get(responses.ResponseNewParams{Model: "gpt-4o-mini", Tools: []responses.ToolUnionParam{spaces}, Input: input(ask, call, output)})
		if !strings.Contains(answered.OutputText(), "Tool result received: agent a-1 runs") {
			t.Errorf("streamed=%v: answer to the output %s", streamed, answered.RawJSON())
		}
		searched := get(responses.ResponseNewParams{Model: "gpt-4o-mini", Tools: []responses.ToolUnionParam{search}, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("[[web_search]] news")}})
		if len(searched.Output) != 2 || searched.Output[0].Type != "web_search_call" || !strings.Contains(searched.OutputText(), "news") {
			t.Errorf("streamed=%v: searched answer %s", streamed, searched.RawJSON())
		}
	}
}
