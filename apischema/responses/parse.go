package responses

import (
	"net/http"
	"strconv"

	"github.com/switchyard/switchyard/apischema/openai"
)

// MaxItems bounds the input items of one request.
const MaxItems = 100_000

// maxNameBytes bounds the client's strings that name things and travel
// into ledger rows, logs and error messages, as on the chat route.
const maxNameBytes = 256

// form is a Responses request's: a function's parameters, a text
// format's schema and metadata are the client's own documents.
var form = openai.Form{
	What:        "Responses request",
	FreeForm:    map[string]bool{"parameters": true, "schema": true, "metadata": true},
	MaxElements: openai.MaxElements,
}

// ParseRequest decodes and checks a /v1/responses body. What needs state
// the gateway does not keep (previous_response_id, store: true, a
// conversation, a background run, a stored prompt, an item reference) and
// what only OpenAI runs (built-in tools, files by id) is refused with a
// 400 naming the parameter, in OpenAI's envelope.
func ParseRequest(body []byte) (*Request, *openai.Error) {
	var r Request
	if e := openai.DecodeBody(body, &r, form); e != nil {
		return nil, e
	}
	if e := checkStateless(&r); e != nil {
		return nil, e
	}
	switch {
	case r.Model == "":
		return nil, invalid("missing_required_parameter", "model", "you must provide a model parameter")
	case len(r.Model) > maxNameBytes:
		return nil, invalid("invalid_value", "model", "model must be at most %d bytes", maxNameBytes)
	case len(r.User) > maxNameBytes:
		return nil, invalid("invalid_value", "user", "user must be at most %d bytes", maxNameBytes)
	case len(r.SafetyIdentifier) > maxNameBytes:
		return nil, invalid("invalid_value", "safety_identifier", "safety_identifier must be at most %d bytes", maxNameBytes)
	case !r.Input.Set:
		return nil, invalid("missing_required_parameter", "input", "you must provide input: a string or an array of input items")
	case len(r.Input.Items) == 0 || len(r.Input.Items) > MaxItems:
		return nil, invalid("invalid_value", "input", "input must hold between 1 and %d items", MaxItems)
	}
	for i := range r.Input.Items {
		if e := checkItem(&r.Input.Items[i], i); e != nil {
			return nil, e
		}
	}
	if e := checkOptions(&r); e != nil {
		return nil, e
	}
	return &r, nil
}

// checkStateless refuses what continues or keeps a response: the gateway
// keeps no responses, so it could neither find the one named nor serve a
// later request that names this one.
func checkStateless(r *Request) *openai.Error {
	switch {
	case r.PreviousResponseID != nil && *r.PreviousResponseID != "":
		return unsupported("previous_response_id", "previous_response_id is not supported: this gateway keeps no responses; send the whole conversation in input (and store: false)")
	case r.Store != nil && *r.Store:
		return unsupported("store", "store: true is not supported: this gateway keeps no responses; send store: false, or leave it out")
	case len(r.Conversation) > 0 && string(r.Conversation) != "null":
		return unsupported("conversation", "conversation is not supported: this gateway keeps no conversations; send the whole conversation in input")
	case r.Background != nil && *r.Background:
		return unsupported("background", "background: true is not supported: this gateway keeps no responses to poll; stream the answer instead")
	case len(r.Prompt) > 0 && string(r.Prompt) != "null":
		return unsupported("prompt", "prompt is not supported: stored prompt templates live at OpenAI; send the instructions and input themselves")
	}
	return nil
}

func checkItem(it *Item, i int) *openai.Error {
	param := "input[" + strconv.Itoa(i) + "]"
	bad := func(format string, args ...any) *openai.Error {
		return invalid("invalid_value", param, param+": "+format, args...)
	}
	switch it.Type {
	case "", ItemMessage:
		switch it.Role {
		case "user", "system", "developer", "assistant":
		case "":
			return bad("a message needs a role")
		default:
			return bad("unknown role %q (want user, assistant, system or developer)", openai.Clip(it.Role))
		}
		if it.Content == nil {
			return bad("a message needs content")
		}
		for j := range it.Content {
			if e := checkPart(&it.Content[j], it.Role, param+".content["+strconv.Itoa(j)+"]"); e != nil {
				return e
			}
		}
	case ItemFunctionCall:
		if it.CallID == "" || it.Name == "" {
			return bad("a function_call needs a call_id and a name")
		}
	case ItemFunctionCallOutput:
		if it.CallID == "" {
			return bad("a function_call_output needs a call_id")
		}
		if it.Output == nil {
			return bad("a function_call_output needs an output")
		}
		for j, p := range it.Output {
			if p.Type != "input_text" && p.Type != "output_text" {
				return bad("output[%d]: only text outputs are served, got %q", j, openai.Clip(p.Type))
			}
		}
	case ItemReasoning:
		// A model's own reasoning from an earlier turn; only the model that
		// wrote it reads it back, so it is dropped on the way.
	case ItemReference:
		return unsupported(param, "%s: item_reference is not supported: this gateway keeps no items; send the item itself", param)
	default:
		return unsupported(param, "%s: input items of type %q are not supported; send messages, function_call and function_call_output items", param, openai.Clip(it.Type))
	}
	return nil
}

func checkPart(p *Part, role, at string) *openai.Error {
	bad := func(format string, args ...any) *openai.Error {
		return invalid("invalid_value", at, at+": "+format, args...)
	}
	switch p.Type {
	case "input_text", "output_text", "text":
		return nil
	case "refusal":
		if role != "assistant" {
			return bad("refusal parts belong to assistant messages")
		}
		return nil
	case "input_image", "input_file":
		if role != "user" {
			return bad("%s parts belong to user messages", p.Type)
		}
	default:
		return bad("unknown content part type %q", openai.Clip(p.Type))
	}
	switch {
	case p.Type == "input_image" && p.ImageURL != "", p.Type == "input_file" && p.FileData != "":
		return nil
	case p.FileID != "" || p.FileURL != "":
		return unsupported(at, "%s: files by file_id or file_url live in OpenAI's file store; send the bytes (image_url, file_data) instead", at)
	case p.Type == "input_image":
		return bad("an input_image needs image_url")
	}
	return bad("an input_file needs file_data")
}

func checkOptions(r *Request) *openai.Error {
	bad := func(param, format string, args ...any) *openai.Error {
		return invalid("invalid_value", param, format, args...)
	}
	switch {
	case r.MaxOutputTokens != nil && *r.MaxOutputTokens < 1:
		return bad("max_output_tokens", "max_output_tokens must be at least 1")
	case r.Temperature != nil && (*r.Temperature < 0 || *r.Temperature > 2):
		return bad("temperature", "temperature must be between 0 and 2")
	case r.TopP != nil && (*r.TopP < 0 || *r.TopP > 1):
		return bad("top_p", "top_p must be between 0 and 1")
	}
	for i, t := range r.Tools {
		param := "tools[" + strconv.Itoa(i) + "]"
		if t.Type != "function" {
			return unsupported(param, "%s: tools of type %q run at OpenAI and are not served; use function tools", param, openai.Clip(t.Type))
		}
		if t.Name == "" {
			return bad(param, "%s: a function tool needs a name", param)
		}
	}
	if f := r.Text; f != nil && f.Format != nil {
		switch f.Format.Type {
		case "text", "json_object":
		case "json_schema":
			if f.Format.Name == "" || len(f.Format.Schema) == 0 {
				return bad("text.format", "text.format of type json_schema needs a name and a schema")
			}
		default:
			return bad("text.format", "text.format.type must be text, json_object or json_schema")
		}
	}
	// A tier other than the default changes what the provider charges,
	// which the policy's prices (and so budgets and the ledger) do not
	// know.
	switch r.ServiceTier {
	case "", "auto", "default":
	default:
		return bad("service_tier", "service_tier must be \"auto\" or \"default\": other tiers are priced differently from what this gateway's budgets account for")
	}
	switch r.Truncation {
	case "", "disabled", "auto":
	default:
		return bad("truncation", "truncation must be \"auto\" or \"disabled\"")
	}
	return nil
}

func invalid(code, param, format string, args ...any) *openai.Error {
	return openai.Errorf(http.StatusBadRequest, openai.TypeInvalidRequest, code, format, args...).WithParam(param)
}

func unsupported(param, format string, args ...any) *openai.Error {
	return invalid("unsupported_parameter", param, format, args...)
}
