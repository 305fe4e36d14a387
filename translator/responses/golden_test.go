package responses

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/apischema/responsesapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/translator"
	"github.com/switchyard/switchyard/translator/anthropic"
	"github.com/switchyard/switchyard/translator/gemini"
	"github.com/switchyard/switchyard/translator/openai"
	"github.com/switchyard/switchyard/translator/translatortest"
)

// The golden files live under testdata/<kind>/:
//
//	request/<case>.in.json      Responses request body
//	request/<case>.golden.json  its canonical chat request and the body each
//	                            provider kind is sent (or its refusal)
//	response/<case>.in.json     a provider's whole answer (200)
//	response/<case>.golden.json the Responses client's result
//	error/<case>.in.json        {"status","header","body"}: a provider's error
//	error/<case>.golden.json    the client's result, in OpenAI's envelope
//	stream/<case>.in.sse        a provider's SSE bytes
//	stream/<case>.golden.sse    the Responses client's SSE bytes
//
// A response, error or stream case whose name starts with anthropic_ or
// gemini_ holds that provider's answer and runs the (Responses, chat)
// pair over that provider's chat translator; any other holds an OpenAI
// answer. A case may add <case>.req.json, the Responses request that
// preceded it.

const (
	defaultRequest       = `{"model":"my-model","input":"Hi"}`
	defaultStreamRequest = `{"model":"my-model","input":"Hi","stream":true}`
)

// kinds are the chat translators of each provider kind.
var kinds = map[policy.Kind]func(translator.Target) translator.Translator{
	policy.KindOpenAI:    func(t translator.Target) translator.Translator { return openai.New(t) },
	policy.KindAnthropic: func(t translator.Target) translator.Translator { return anthropic.New(t) },
	policy.KindGemini:    func(t translator.Target) translator.Translator { return gemini.New(t) },
}

func testTarget(k policy.Kind) translator.Target {
	p := &policy.Provider{Name: string(k), Kind: k}
	return translator.Target{
		Provider:    p,
		Model:       &policy.Model{Name: "my-model", Upstream: "upstream-model", Provider: p, ContextWindow: 128000, MaxOutputTokens: 16384, DefaultMaxTokens: 1024},
		ClientModel: "my-model",
		Key:         "test-key-0001",
		ID:          "chatcmpl-test0001",
		Created:     1767225600,
	}
}

// kindOf is the provider kind a case's name says its answer is from.
func kindOf(name string) policy.Kind {
	for _, k := range []policy.Kind{policy.KindAnthropic, policy.KindGemini} {
		if strings.HasPrefix(name, string(k)+"_") {
			return k
		}
	}
	return policy.KindOpenAI
}

// send parses raw as the route does and hands it to a new translator over
// the chat translator of provider kind k.
func send(t testing.TB, k policy.Kind, raw []byte) (*Translator, translator.Upstream, error) {
	t.Helper()
	r, e := responsesapi.ParseRequest(raw)
	if e != nil {
		t.Fatalf("the Responses request does not parse: %v", e)
	}
	tt := testTarget(k)
	tr := New(kinds[k](tt), tt)
	up, e := tr.Request(ToChat(r), raw)
	if e != nil {
		return tr, up, e
	}
	return tr, up, nil
}

func fresh(t testing.TB, k policy.Kind, raw []byte) *Translator {
	t.Helper()
	tr, _, err := send(t, k, raw)
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	return tr
}

func TestRequestGolden(t *testing.T) {
	translatortest.Run(t, "request", "json", func(t *testing.T, c translatortest.Case) {
		raw := c.Input(t)
		r, e := responsesapi.ParseRequest(raw)
		if e != nil {
			t.Fatalf("the Responses request does not parse: %v", e)
		}
		got := map[string]any{"chat": ToChat(r)}
		for k := range kinds {
			_, up, err := send(t, k, raw)
			if err != nil {
				got[string(k)] = struct {
					Refused json.RawMessage `json:"refused"`
				}{err.(interface{ Body() []byte }).Body()}
				continue
			}
			got[string(k)] = struct {
				Path string          `json:"path"`
				Body json.RawMessage `json:"body"`
			}{up.Path, up.Body}
		}
		c.Check(t, translatortest.JSON(t, got))
	})
}

func TestResponseGolden(t *testing.T) {
	translatortest.Run(t, "response", "json", func(t *testing.T, c translatortest.Case) {
		tr := fresh(t, kindOf(c.Name), c.Request(defaultRequest))
		r := tr.Complete(200, translator.Headers{{Key: "content-type", Value: "application/json"}}, c.Input(t))
		translatortest.CheckComplete(t, 200, r, isResponse)
		c.Check(t, translatortest.JSON(t, translatortest.ResultOf(t, r)))
	})
}

func TestErrorGolden(t *testing.T) {
	translatortest.Run(t, "error", "json", func(t *testing.T, c translatortest.Case) {
		var in struct {
			Status int               `json:"status"`
			Header map[string]string `json:"header"`
			Body   string            `json:"body"`
		}
		if err := json.Unmarshal(c.Input(t), &in); err != nil {
			t.Fatal(err)
		}
		r := fresh(t, kindOf(c.Name), c.Request(defaultRequest)).Complete(in.Status, translatortest.Headers(in.Header), []byte(in.Body))
		translatortest.CheckComplete(t, in.Status, r, isResponse)
		c.Check(t, translatortest.JSON(t, translatortest.ResultOf(t, r)))
	})
}

func TestStreamGolden(t *testing.T) {
	translatortest.Streams(t, func(t *testing.T, c translatortest.Case) func() translator.Translator {
		req, k := c.Request(defaultStreamRequest), kindOf(c.Name)
		return func() translator.Translator { return fresh(t, k, req) }
	})
}

// isResponse returns why r's body is not a finished response object, or
// nil.
func isResponse(r translator.Result) error {
	var resp struct {
		Object string `json:"object"`
		Status string `json:"status"`
		Output []struct {
			Type string `json:"type"`
		} `json:"output"`
	}
	if err := json.Unmarshal(r.Body, &resp); err != nil || resp.Object != "response" {
		return errNotResponse
	}
	if resp.Status != responsesapi.StatusCompleted && resp.Status != responsesapi.StatusIncomplete {
		return errNotResponse
	}
	for _, o := range resp.Output {
		if o.Type != "message" && o.Type != "function_call" {
			return errNotResponse
		}
	}
	return nil
}

var errNotResponse = errors.New("the body is not a finished response object with message and function_call items")
