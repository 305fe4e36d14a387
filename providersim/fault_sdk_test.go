package providersim_test

import (
	"errors"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"google.golang.org/genai"

	"github.com/switchyard/switchyard/providersim"
)

// sdkRun makes one streamed or plain call with an official SDK and reports
// the error it surfaced, if any.
type sdkRun func(t *testing.T, sim *providersim.Sim, stream bool) error

var sdkRuns = map[providersim.Kind]sdkRun{
	providersim.KindOpenAI: func(t *testing.T, sim *providersim.Sim, stream bool) error {
		client := openai.NewClient(option.WithBaseURL(sim.URL("openai")+"/v1/"), option.WithAPIKey("k"), option.WithMaxRetries(0))
		params := openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")}}
		if !stream {
			_, err := client.Chat.Completions.New(t.Context(), params)
			return err
		}
		s := client.Chat.Completions.NewStreaming(t.Context(), params)
		defer s.Close()
		for s.Next() {
		}
		return s.Err()
	},
	providersim.KindAnthropic: func(t *testing.T, sim *providersim.Sim, stream bool) error {
		client := anthropic.NewClient(anthropicoption.WithBaseURL(sim.URL("anthropic")), anthropicoption.WithAPIKey("k"), anthropicoption.WithMaxRetries(0))
		params := anthropic.MessageNewParams{Model: "m", MaxTokens: 10, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hi"))}}
		if !stream {
			_, err := client.Messages.New(t.Context(), params)
			return err
		}
		s := client.Messages.NewStreaming(t.Context(), params)
		defer s.Close()
		var msg anthropic.Message
		for s.Next() {
			if err := msg.Accumulate(s.Current()); err != nil {
				return err
			}
		}
		return s.Err()
	},
	providersim.KindGemini: func(t *testing.T, sim *providersim.Sim, stream bool) error {
		client := newGenaiClient(t, sim.URL("gemini"), "k")
		if !stream {
			_, err := client.Models.GenerateContent(t.Context(), "m", genai.Text("Hi"), nil)
			return err
		}
		for _, err := range client.Models.GenerateContentStream(t.Context(), "m", genai.Text("Hi"), nil) {
			if err != nil {
				return err
			}
		}
		return nil
	},
}

// TestFaultsThroughSDKs shows that every fault reaches an SDK user as an
// error, which is what a gateway in front of the simulator must handle.
func TestFaultsThroughSDKs(t *testing.T) {
	tests := []struct {
		name   string
		fault  providersim.Fault
		stream bool
	}{
		{"cut stream", providersim.Fault{Mode: providersim.FaultCutStream, Chunks: 2}, true},
		{"malformed stream", providersim.Fault{Mode: providersim.FaultMalformed}, true},
		{"malformed body", providersim.Fault{Mode: providersim.FaultMalformed}, false},
		{"status 500", providersim.Fault{Mode: providersim.FaultStatus, Status: 500}, false},
		{"status 503 on a stream", providersim.Fault{Mode: providersim.FaultStatus, Status: 503}, true},
	}
	for kind, run := range sdkRuns {
		for _, tt := range tests {
			t.Run(string(kind)+"/"+tt.name, func(t *testing.T) {
				sim, _ := startKind(t, kind)
				if err := run(t, sim, tt.stream); err != nil {
					t.Fatalf("without a fault: %v", err)
				}
				setFault(t, sim, string(kind), tt.fault)
				if err := run(t, sim, tt.stream); err == nil {
					t.Errorf("got no error, want the fault to surface")
				}
			})
		}
	}
}

func TestNativeErrorsThroughSDKs(t *testing.T) {
	t.Run("anthropic 529 is overloaded_error", func(t *testing.T) {
		sim, _ := startKind(t, providersim.KindAnthropic)
		setFault(t, sim, "anthropic", providersim.Fault{Mode: providersim.FaultStatus, Status: 529})
		err := sdkRuns[providersim.KindAnthropic](t, sim, false)
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 529 || apiErr.Type() != "overloaded_error" {
			t.Errorf("got %v, want 529 overloaded_error", err)
		}
	})
	t.Run("openai 429 is rate_limit_exceeded", func(t *testing.T) {
		sim, _ := startKind(t, providersim.KindOpenAI)
		setFault(t, sim, "openai", providersim.Fault{Mode: providersim.FaultStatus, Status: 429})
		err := sdkRuns[providersim.KindOpenAI](t, sim, false)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Code != "rate_limit_exceeded" {
			t.Errorf("got %v, want 429 rate_limit_exceeded", err)
		}
	})
	t.Run("gemini 429 carries RetryInfo", func(t *testing.T) {
		sim, _ := startKind(t, providersim.KindGemini)
		setFault(t, sim, "gemini", providersim.Fault{Mode: providersim.FaultStatus, Status: 429})
		err := sdkRuns[providersim.KindGemini](t, sim, false)
		var apiErr genai.APIError
		if !errors.As(err, &apiErr) || apiErr.Status != "RESOURCE_EXHAUSTED" {
			t.Fatalf("got %v, want RESOURCE_EXHAUSTED", err)
		}
		var delay any
		for _, d := range apiErr.Details {
			if d["@type"] == "type.googleapis.com/google.rpc.RetryInfo" {
				delay = d["retryDelay"]
			}
		}
		if delay != "1s" {
			t.Errorf("got retryDelay %v, want 1s", delay)
		}
	})
}
