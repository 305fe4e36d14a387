package responsesapi

import (
	"encoding/json"

	"github.com/switchyard/switchyard/apischema/openaiapi"
)

// Stream event types, in the order a stream uses them.
const (
	EventCreated           = "response.created"
	EventInProgress        = "response.in_progress"
	EventOutputItemAdded   = "response.output_item.added"
	EventContentPartAdded  = "response.content_part.added"
	EventOutputTextDelta   = "response.output_text.delta"
	EventRefusalDelta      = "response.refusal.delta"
	EventFunctionArgsDelta = "response.function_call_arguments.delta"
	EventOutputTextDone    = "response.output_text.done"
	EventRefusalDone       = "response.refusal.done"
	EventFunctionArgsDone  = "response.function_call_arguments.done"
	EventContentPartDone   = "response.content_part.done"
	EventOutputItemDone    = "response.output_item.done"
	EventCompleted         = "response.completed"
	EventIncomplete        = "response.incomplete"
	EventError             = "error"
)

// Event bodies, declared so their fields come out in OpenAI's order. Every
// event carries its type and the stream's next sequence number.
type (
	// ResponseEvent is response.created, in_progress, completed or
	// incomplete.
	ResponseEvent struct {
		Type           string   `json:"type"`
		SequenceNumber int      `json:"sequence_number"`
		Response       Response `json:"response"`
	}
	// ItemEvent is response.output_item.added or done.
	ItemEvent struct {
		Type           string `json:"type"`
		SequenceNumber int    `json:"sequence_number"`
		OutputIndex    int    `json:"output_index"`
		Item           any    `json:"item"`
	}
	// PartEvent is response.content_part.added or done.
	PartEvent struct {
		Type           string `json:"type"`
		SequenceNumber int    `json:"sequence_number"`
		ItemID         string `json:"item_id"`
		OutputIndex    int    `json:"output_index"`
		ContentIndex   int    `json:"content_index"`
		Part           any    `json:"part"`
	}
	// TextDeltaEvent is response.output_text.delta or
	// response.refusal.delta.
	TextDeltaEvent struct {
		Type           string `json:"type"`
		SequenceNumber int    `json:"sequence_number"`
		ItemID         string `json:"item_id"`
		OutputIndex    int    `json:"output_index"`
		ContentIndex   int    `json:"content_index"`
		Delta          string `json:"delta"`
		// Logprobs is an empty list on output_text.delta, absent on
		// refusal.delta.
		Logprobs *[]any `json:"logprobs,omitempty"`
	}
	// TextDoneEvent is response.output_text.done.
	TextDoneEvent struct {
		Type           string `json:"type"`
		SequenceNumber int    `json:"sequence_number"`
		ItemID         string `json:"item_id"`
		OutputIndex    int    `json:"output_index"`
		ContentIndex   int    `json:"content_index"`
		Text           string `json:"text"`
		Logprobs       []any  `json:"logprobs"`
	}
	// RefusalDoneEvent is response.refusal.done.
	RefusalDoneEvent struct {
		Type           string `json:"type"`
		SequenceNumber int    `json:"sequence_number"`
		ItemID         string `json:"item_id"`
		OutputIndex    int    `json:"output_index"`
		ContentIndex   int    `json:"content_index"`
		Refusal        string `json:"refusal"`
	}
	// ArgsDeltaEvent is response.function_call_arguments.delta.
	ArgsDeltaEvent struct {
		Type           string `json:"type"`
		SequenceNumber int    `json:"sequence_number"`
		ItemID         string `json:"item_id"`
		OutputIndex    int    `json:"output_index"`
		Delta          string `json:"delta"`
	}
	// ArgsDoneEvent is response.function_call_arguments.done.
	ArgsDoneEvent struct {
		Type           string `json:"type"`
		SequenceNumber int    `json:"sequence_number"`
		ItemID         string `json:"item_id"`
		OutputIndex    int    `json:"output_index"`
		Name           string `json:"name"`
		Arguments      string `json:"arguments"`
	}
)

// errorEvent is the error event. The Responses API types it flat (code,
// message, param), and that is what a client that reads it as an event
// finds; the same error in OpenAI's envelope under "error" is what makes
// the SDKs' stream readers (openai-go's ssestream, openai-python's Stream)
// end the stream with an error rather than hand it over as one more event.
type errorEvent struct {
	Type           string          `json:"type"`
	SequenceNumber int             `json:"sequence_number"`
	Code           *string         `json:"code"`
	Message        string          `json:"message"`
	Param          *string         `json:"param"`
	Error          json.RawMessage `json:"error"`
}

// ErrorEvent renders a refusal as the error event that ends a stream whose
// headers are gone; seq is the stream's next sequence number.
func ErrorEvent(e *openaiapi.Error, seq int) []byte {
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	_ = json.Unmarshal(e.Body(), &env)
	ev := errorEvent{Type: EventError, SequenceNumber: seq, Message: e.Message, Error: env.Error}
	if e.Code != "" {
		ev.Code = &e.Code
	}
	if e.Param != "" {
		ev.Param = &e.Param
	}
	b, _ := json.Marshal(ev)
	return AppendEvent(nil, EventError, b)
}

// AppendEvent appends one named SSE event to dst.
func AppendEvent(dst []byte, name string, data []byte) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, name...)
	dst = append(dst, "\ndata: "...)
	dst = append(dst, data...)
	return append(dst, '\n', '\n')
}
