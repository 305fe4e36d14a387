package probe

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
)

// check is the probe of one capability: a chat request that needs it,
// and what of the answer shows the model has it.
type check struct {
	name string
	cap  policy.Capability
	// body is the probe's chat request for a model, its answer capped at
	// maxTokens.
	body func(model string, maxTokens int) []byte
}

// checks are the capabilities probed, in the order they are probed.
// Chat itself is not among them: a model that cannot chat fails every
// request, which the health monitor sees.
var checks = []check{
	{name: "tools", cap: policy.CapTools, body: func(model string, n int) []byte {
		// tool_choice "auto" rather than forcing the call: some servers
		// (Ollama) cannot be forced, and real requests rarely force it.
		return chat(model, n, "Call the function probe now.", map[string]any{
			"tools": []any{map[string]any{"type": "function", "function": map[string]any{
				"name": "probe", "description": "Confirms that tools can be called.",
				"parameters": map[string]any{"type": "object", "properties": map[string]any{}},
			}}},
			"tool_choice": "auto",
		})
	}},
	{name: "vision", cap: policy.CapVision, body: func(model string, n int) []byte {
		return chat(model, n, []any{
			map[string]any{"type": "text", "text": "What colour is this image? One word."},
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": redSquare, "detail": "low"}},
		}, nil)
	}},
	{name: "json", cap: policy.CapJSON, body: func(model string, n int) []byte {
		return chat(model, n, `Reply with the JSON object {"ok": true}.`, map[string]any{
			"response_format": map[string]any{"type": "json_object"},
		})
	}},
	{name: "stream", cap: policy.CapStream, body: func(model string, n int) []byte {
		return chat(model, n, "Say ok.", map[string]any{
			"stream": true, "stream_options": map[string]any{"include_usage": true},
		})
	}},
}

// chat is a chat request of one user message, with extra fields.
func chat(model string, maxTokens int, content any, extra map[string]any) []byte {
	req := map[string]any{
		"model":      model,
		"messages":   []any{map[string]any{"role": "user", "content": content}},
		"max_tokens": maxTokens,
	}
	for k, v := range extra {
		req[k] = v
	}
	b, err := json.Marshal(req)
	if err != nil {
		// Only the literals above are marshalled.
		panic(err)
	}
	return b
}

// redSquare is an 8×8 red PNG as a data URL: the smallest image every
// provider takes, sent at low detail. It is written out rather than
// encoded as the package initialises, which cost every node 0.86 MB of
// garbage and the PNG encoder's pages (TestRedSquare decodes it).
const redSquare = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAF0lEQVR4nGL5z4AdMOEQH6QSgAAAAP//z5kBEvfslMoAAAAASUVORK5CYII="

// Outcome is what one probe found.
type Outcome uint8

// The outcomes of a probe.
const (
	// Passed: the model did what the capability means.
	Passed Outcome = iota + 1
	// Failed: the provider refused the request for what it asked (a 400),
	// or answered without doing it.
	Failed
	// Inconclusive: the probe says nothing of the capability (no answer,
	// a rate limit, a 5xx, a key refused, an answer cut at max_tokens);
	// the verdict before it stands.
	Inconclusive
	// Capped: not sent, the provider's probes having spent their daily
	// cap; the verdict before it stands.
	Capped
)

var outcomeNames = [...]string{Passed: "passed", Failed: "failed", Inconclusive: "inconclusive", Capped: "capped"}

// String returns the outcome's name, as in metrics and the admin API.
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) && o != 0 {
		return outcomeNames[o]
	}
	return "unknown"
}

// answer is a probe's answer, translated into OpenAI's chat protocol.
type answer struct {
	status int
	// body is the whole completion or error envelope, or for a stream
	// the events the client would have been sent.
	body   []byte
	stream bool
	// usage reports whether the provider counted the tokens.
	usage bool
}

// maxDetail bounds the provider's words a verdict repeats.
const maxDetail = 200

// judge says what the answer to the probe of capability c shows.
func judge(c policy.Capability, a answer) (Outcome, string) {
	if a.status != http.StatusOK {
		return refused(a.status, a.body)
	}
	if c == policy.CapStream {
		return judgeStream(a)
	}
	var cc openaiapi.ChatCompletion
	if json.Unmarshal(a.body, &cc) != nil || len(cc.Choices) == 0 {
		return Inconclusive, "the answer has no choice to read"
	}
	ch := cc.Choices[0]
	cut := ch.FinishReason == "length"
	switch c {
	case policy.CapTools:
		switch {
		case len(ch.Message.ToolCalls) > 0:
			return Passed, ""
		case cut:
			return Inconclusive, "the answer reached max_tokens before a tool call"
		}
		return Failed, "answered without calling the tool it was told to call"
	case policy.CapJSON:
		content := ""
		if ch.Message.Content != nil {
			content = *ch.Message.Content
		}
		switch {
		case json.Valid([]byte(content)):
			return Passed, ""
		case cut:
			return Inconclusive, "the answer reached max_tokens before its JSON ended"
		}
		return Failed, "the answer in JSON mode is not JSON"
	}
	// Vision: the model took the image and answered.
	return Passed, ""
}

// judgeStream reads a translated stream: it must stream, end, and carry
// the usage the gateway accounts streamed answers by.
func judgeStream(a answer) (Outcome, string) {
	if !a.stream {
		return Failed, "answered a stream request without streaming"
	}
	done := false
	for line := range bytes.SplitSeq(a.body, []byte("\n")) {
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok {
			continue
		}
		if string(data) == "[DONE]" {
			done = true
			continue
		}
		var ev struct {
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(data, &ev) == nil && ev.Error != nil {
			return Inconclusive, "the stream ended in an error: " + clip(ev.Error.Message)
		}
	}
	switch {
	case !done:
		return Inconclusive, "the stream did not end"
	case !a.usage:
		return Failed, "the stream carried no usage"
	}
	return Passed, ""
}

// refused judges an answer that is not a success. A 400 (or 415, 422)
// to a well-formed probe is the provider refusing what it asked; any
// other status says nothing of the capability.
func refused(status int, body []byte) (Outcome, string) {
	detail := "status " + strconv.Itoa(status)
	var env struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &env) == nil && env.Error.Message != "" {
		detail += ": " + clip(env.Error.Message)
	}
	switch status {
	case http.StatusBadRequest, http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity:
		return Failed, detail
	}
	return Inconclusive, detail
}

// clip shortens a provider's message to maxDetail bytes, at a rune
// boundary.
func clip(s string) string {
	if len(s) <= maxDetail {
		return s
	}
	n := maxDetail
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
