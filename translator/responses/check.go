package responses

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/apischema/responsesapi"
)

// checkItems refuses what a chat request cannot carry of a Responses
// request that the parser, which passes the unknown on to OpenAI, let
// through: an item, a role or a part of a type a chat message has no
// place for, a text format a chat request cannot ask for, a tool of a
// namespace that is not a function. Each refusal names the field and the
// provider (a provider of OpenAI's own kind would have read it). Reasoning
// and web search calls, which only OpenAI reads back, and tools that only
// OpenAI runs are left out instead ([ToChat]).
func checkItems(r *responsesapi.Request, provider string) *openaiapi.Error {
	for i := range r.Input.Items {
		it := &r.Input.Items[i]
		at := "input[" + strconv.Itoa(i) + "]"
		switch it.Type {
		case responsesapi.ItemReasoning, responsesapi.ItemWebSearchCall, responsesapi.ItemFunctionCall:
		case responsesapi.ItemFunctionCallOutput:
			for j, p := range it.Output {
				if p.Type != "input_text" && p.Type != "output_text" {
					return refuse(at+".output["+strconv.Itoa(j)+"]", provider, "only text outputs of a function call can be sent to another provider, got %q", p.Type)
				}
			}
		case "", responsesapi.ItemMessage:
			if e := checkMessage(it, at, provider); e != nil {
				return e
			}
		default:
			return refuse(at+".type", provider, "input items of type %q cannot be sent to another provider: only OpenAI reads them", it.Type)
		}
	}
	if f := r.Text; f != nil && f.Format != nil {
		switch f.Format.Type {
		case "text", "json_object", "json_schema":
		default:
			return refuse("text.format.type", provider, "a text format of type %q cannot be asked of another provider", f.Format.Type)
		}
	}
	for i, t := range r.Tools {
		for j, f := range t.Tools {
			if f.Type != responsesapi.ToolFunction {
				return refuse("tools["+strconv.Itoa(i)+"].tools["+strconv.Itoa(j)+"]", provider, "a namespace's tools of type %q cannot be offered by another provider; only its functions can", f.Type)
			}
		}
	}
	return nil
}

// checkMessage refuses a role a chat message cannot have, and a part that
// has no place in a message of its role: only a user's turn holds images
// and files, only an assistant's refusals.
func checkMessage(it *responsesapi.Item, at, provider string) *openaiapi.Error {
	switch it.Role {
	case "user", "system", "developer", "assistant":
	default:
		return refuse(at+".role", provider, "messages of role %q cannot be sent to another provider (user, assistant, system or developer can)", it.Role)
	}
	for j, p := range it.Content {
		fits := false
		switch p.Type {
		case "input_text", "output_text", "text":
			fits = true
		case "refusal":
			fits = it.Role == "assistant"
		case "input_image", "input_file":
			fits = it.Role == "user"
		}
		if !fits {
			return refuse(at+".content["+strconv.Itoa(j)+"]", provider, "a %s message's parts of type %q cannot be sent to another provider", it.Role, p.Type)
		}
	}
	return nil
}

// refuse is the 400 naming param and the provider; args quoted into the
// message are the client's, clipped.
func refuse(param, provider, format string, args ...any) *openaiapi.Error {
	for i, a := range args {
		if s, ok := a.(string); ok {
			args[i] = openaiapi.Clip(s)
		}
	}
	return openaiapi.Errorf(http.StatusBadRequest, openaiapi.TypeInvalidRequest, "unsupported_parameter",
		"%s: %s (provider %s)", param, fmt.Sprintf(format, args...), provider).WithParam(param)
}
