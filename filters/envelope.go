package filters

import (
	"github.com/switchyard/switchyard/apischema/anthropicapi"
	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/translator"
)

// SpeaksAnthropic reports whether the client expects Anthropic's wire
// format: on the Messages routes, and on the model list when the client
// sent anthropic-version, as Anthropic's SDKs always do.
func (x *Exchange) SpeaksAnthropic() bool {
	if x == nil || x.Route == nil {
		return false
	}
	switch x.Route.API {
	case policy.APIMessages, policy.APICountTokens:
		return true
	case policy.APIModels:
		return x.Header.Get("anthropic-version") != ""
	}
	return false
}

// ErrorBody renders a refusal in the error envelope the client expects.
// A nil exchange (a request that matched no route) gets OpenAI's.
func (x *Exchange) ErrorBody(e *openaiapi.Error) []byte {
	if x.SpeaksAnthropic() {
		return anthropicapi.ErrorBody(e, x.ID)
	}
	return e.Body()
}

// ErrorEvent renders a refusal as the event that ends a stream whose
// headers are gone, in the client's protocol. A translator whose events
// are numbered (Responses) renders it, numbered next in its stream.
func (x *Exchange) ErrorEvent(e *openaiapi.Error) []byte {
	if a := x.LastAttempt(); a != nil {
		if ee, ok := a.Translator.(translator.ErrorEventer); ok {
			return ee.ErrorEvent(e)
		}
	}
	if x.SpeaksAnthropic() {
		return anthropicapi.ErrorEvent(e)
	}
	return e.StreamEvent()
}
