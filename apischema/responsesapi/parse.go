package responsesapi

import (
	"net/http"
	"strconv"

	"github.com/switchyard/switchyard/apischema/openaiapi"
)

// MaxItems bounds the input items of one request.
const MaxItems = 100_000

// MaxTools bounds the tools of one request, a namespace's counted one by
// one: each is kept as the client wrote it, for the response to repeat.
const MaxTools = 4096

// maxNameBytes bounds the client's strings that name things and travel
// into ledger rows, logs and error messages, as on the chat route.
const maxNameBytes = 256

// form is a Responses request's: a function's parameters, a text
// format's schema and metadata are the client's own documents.
var form = openaiapi.Form{
	What:        "Responses request",
	FreeForm:    map[string]bool{"parameters": true, "schema": true, "metadata": true},
	MaxElements: openaiapi.MaxElements,
}

// ParseRequest decodes and checks a /v1/responses body. It reads what the
// gateway needs (the model, the output cap, stream, the input items and
// tools a translation carries) and bounds it; fields, item types, content
// parts and tool types it does not know are not refused, since OpenAI
// gets the body as it came and a translation refuses what it cannot
// carry. What needs state the gateway does not keep (previous_response_id,
// store: true, a conversation, a background run, a stored prompt, an item
// reference, a file in OpenAI's store) is refused with a 400 naming the
// parameter, in OpenAI's envelope: a fallback to another provider could
// not follow it.
func ParseRequest(body []byte) (*Request, *openaiapi.Error) {
	var r Request
	if e := openaiapi.DecodeBody(body, &r, form); e != nil {
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
func checkStateless(r *Request) *openaiapi.Error {
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

// checkItem checks what the gateway reads of an item: a message's role and
// content, a call's id and name, an output's id.
func checkItem(it *Item, i int) *openaiapi.Error {
	param := "input[" + strconv.Itoa(i) + "]"
	bad := func(format string, args ...any) *openaiapi.Error {
		return invalid("invalid_value", param, param+": "+format, args...)
	}
	switch it.Type {
	case "", ItemMessage:
		switch {
		case it.Role == "":
			return bad("a message needs a role")
		case len(it.Role) > maxNameBytes:
			return bad("role must be at most %d bytes", maxNameBytes)
		case it.Content == nil:
			return bad("a message needs content")
		}
		for j := range it.Content {
			if e := checkPart(&it.Content[j], param+".content["+strconv.Itoa(j)+"]"); e != nil {
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
		for j := range it.Output {
			if e := checkPart(&it.Output[j], param+".output["+strconv.Itoa(j)+"]"); e != nil {
				return e
			}
		}
	case ItemReference:
		return unsupported(param, "%s: item_reference is not supported: this gateway keeps no items; send the item itself", param)
	}
	return nil
}

// checkPart refuses a file the client means by its place in OpenAI's file
// store, which neither the gateway's key nor another provider reaches.
func checkPart(p *Part, at string) *openaiapi.Error {
	switch {
	case p.Type != "input_image" && p.Type != "input_file":
		return nil
	case p.Type == "input_image" && p.ImageURL != "", p.Type == "input_file" && p.FileData != "":
		return nil
	case p.FileID != "" || p.FileURL != "":
		return unsupported(at, "%s: files by file_id or file_url live in OpenAI's file store; send the bytes (image_url, file_data) instead", at)
	case p.Type == "input_image":
		return invalid("invalid_value", at, "%s: an input_image needs image_url", at)
	}
	return invalid("invalid_value", at, "%s: an input_file needs file_data", at)
}

func checkOptions(r *Request) *openaiapi.Error {
	bad := func(param, format string, args ...any) *openaiapi.Error {
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
	if n := countTools(r.Tools); n > MaxTools {
		return bad("tools", "at most %d tools are served, a namespace's counted one by one; got %d", MaxTools, n)
	}
	if e := checkTools(r.Tools, "tools"); e != nil {
		return e
	}
	if f := r.Text; f != nil && f.Format != nil {
		switch f.Format.Type {
		case "":
			return bad("text.format", "text.format needs a type")
		case "json_schema":
			if f.Format.Name == "" || len(f.Format.Schema) == 0 {
				return bad("text.format", "text.format of type json_schema needs a name and a schema")
			}
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
	return openaiapi.CheckPromptCache(r.PromptCacheOptions)
}

// checkTools checks the tools a translation reads: a function needs a
// name, a namespace a name and tools of its own. Tools of other types are
// OpenAI's to check.
func checkTools(tools []Tool, at string) *openaiapi.Error {
	for i, t := range tools {
		param := at + "[" + strconv.Itoa(i) + "]"
		switch t.Type {
		case "":
			return invalid("invalid_value", param, "%s: a tool needs a type", param)
		case ToolFunction:
			if t.Name == "" || len(t.Name) > maxNameBytes {
				return invalid("invalid_value", param, "%s: a function tool needs a name of at most %d bytes", param, maxNameBytes)
			}
		case ToolNamespace:
			if at != "tools" {
				return invalid("invalid_value", param, "%s: a namespace holds no namespace", param)
			}
			if t.Name == "" || len(t.Name) > maxNameBytes || len(t.Tools) == 0 {
				return invalid("invalid_value", param, "%s: a namespace tool needs a name of at most %d bytes and tools", param, maxNameBytes)
			}
			if e := checkTools(t.Tools, param+".tools"); e != nil {
				return e
			}
		}
	}
	return nil
}

func countTools(tools []Tool) int {
	n := len(tools)
	for _, t := range tools {
		n += len(t.Tools)
	}
	return n
}

func invalid(code, param, format string, args ...any) *openaiapi.Error {
	return openaiapi.Errorf(http.StatusBadRequest, openaiapi.TypeInvalidRequest, code, format, args...).WithParam(param)
}

func unsupported(param, format string, args ...any) *openaiapi.Error {
	return invalid("unsupported_parameter", param, format, args...)
}
