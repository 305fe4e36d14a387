package messages

import (
	"encoding/json"
	"testing"

	"github.com/switchyard/switchyard/apischema/anthropicapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/translator"
	"github.com/switchyard/switchyard/translator/openai"
	"github.com/switchyard/switchyard/translator/translatortest"
)

// The golden files live under testdata/<kind>/:
//
//	request/<case>.in.json      Messages request body
//	request/<case>.golden.json  its canonical chat request and the body an
//	                            OpenAI provider is sent, or the refusal
//	response/<case>.in.json     an OpenAI provider's chat completion (200)
//	response/<case>.golden.json the Messages client's result
//	error/<case>.in.json        {"status","header","body"}: a provider's error
//	error/<case>.golden.json    the client's result, in Anthropic's envelope
//	stream/<case>.in.sse        an OpenAI provider's SSE bytes
//	stream/<case>.golden.sse    the Messages client's SSE bytes
//
// Every case runs the (Messages, OpenAI) pair: this package's translator
// over the OpenAI chat translator.

const (
	defaultRequest       = `{"model":"claude-sonnet","max_tokens":100,"messages":[{"role":"user","content":"Hi"}]}`
	defaultStreamRequest = `{"model":"claude-sonnet","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"Hi"}]}`
)

func testTarget() translator.Target {
	p := &policy.Provider{Name: "openai", Kind: policy.KindOpenAI}
	return translator.Target{
		Provider:    p,
		Model:       &policy.Model{Name: "claude-sonnet", Upstream: "gpt-4o-mini", Provider: p, ContextWindow: 128000, MaxOutputTokens: 16384},
		ClientModel: "claude-sonnet",
		Key:         "test-key-0001",
		ID:          "chatcmpl-test0001",
		Created:     1767225600,
	}
}

// send parses raw as the route does and hands it to a new translator.
func send(t testing.TB, raw []byte) (*Translator, translator.Upstream, error) {
	t.Helper()
	mr, e := anthropicapi.ParseMessagesRequest(raw, false)
	if e != nil {
		t.Fatalf("the Messages request does not parse: %v", e)
	}
	tt := testTarget()
	tr := New(openai.New(tt), tt)
	up, e := tr.Request(ToChat(mr), raw)
	if e != nil {
		return tr, up, e
	}
	return tr, up, nil
}

func fresh(t testing.TB, raw []byte) *Translator {
	t.Helper()
	tr, _, err := send(t, raw)
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	return tr
}

func TestRequestGolden(t *testing.T) {
	translatortest.Run(t, "request", "json", func(t *testing.T, c translatortest.Case) {
		raw := c.Input(t)
		mr, e := anthropicapi.ParseMessagesRequest(raw, false)
		if e != nil {
			t.Fatalf("the Messages request does not parse: %v", e)
		}
		chat := ToChat(mr)
		_, up, err := send(t, raw)
		var got any
		if err != nil {
			e := err.(interface{ Body() []byte })
			got = struct {
				Refused json.RawMessage `json:"refused"`
			}{e.Body()}
		} else {
			got = struct {
				Chat     any             `json:"chat"`
				Upstream json.RawMessage `json:"upstream"`
			}{chat, up.Body}
		}
		c.Check(t, translatortest.JSON(t, got))
	})
}

func TestResponseGolden(t *testing.T) {
	translatortest.Run(t, "response", "json", func(t *testing.T, c translatortest.Case) {
		tr := fresh(t, c.Request(defaultRequest))
		r := tr.Complete(200, translator.Headers{{Key: "content-type", Value: "application/json"}}, c.Input(t))
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
		var h translator.Headers
		for k, v := range in.Header {
			h = append(h, translator.Header{Key: k, Value: v})
		}
		r := fresh(t, c.Request(defaultRequest)).Complete(in.Status, h, []byte(in.Body))
		got := translatortest.ResultOf(t, r)
		var env struct {
			Type  string `json:"type"`
			Error struct{ Type, Message string }
		}
		if json.Unmarshal(r.Body, &env) != nil || env.Type != "error" || env.Error.Type != anthropicapi.ErrorType(r.Status) {
			t.Errorf("body %s is not Anthropic's error envelope for status %d", r.Body, r.Status)
		}
		c.Check(t, translatortest.JSON(t, got))
	})
}

func TestStreamGolden(t *testing.T) {
	translatortest.Streams(t, func(t *testing.T, c translatortest.Case) func() translator.Translator {
		req := c.Request(defaultStreamRequest)
		return func() translator.Translator { return fresh(t, req) }
	})
}
