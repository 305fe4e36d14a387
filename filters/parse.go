package filters

import (
	"github.com/switchyard/switchyard/apischema/anthropicapi"
	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/apischema/responsesapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/translator/messages"
	"github.com/switchyard/switchyard/translator/responses"
)

// parseBody decodes the request body for the route's API before any body
// hook runs, so every filter sees the same typed request: a Messages
// or Responses request is read as its canonical chat request, which every
// filter handles as chat. The body limit is Envoy's to enforce (route
// request_body_buffer_limit), with a 413 in the OpenAI envelope; ext_proc
// never sees a larger body. What the route takes from the body besides
// (the prompt's estimate it fits output to, tags from metadata) is read
// then too.
func parseBody(x *Exchange) *openaiapi.Error {
	if err := decodeBody(x); err != nil {
		return err
	}
	if x.Route.FitOutputToContext && x.Chat != nil {
		x.FitPrompt = openaiapi.EstimatePromptTokens(x.Chat)
	}
	if x.Route.TagsFromMetadata {
		return x.metadataTags()
	}
	return nil
}

// decodeBody reads x.Body as the route's API's request.
func decodeBody(x *Exchange) *openaiapi.Error {
	switch x.Route.API {
	case policy.APIChatCompletions:
		req, err := openaiapi.ParseChatRequest(x.Body)
		if err != nil {
			return err
		}
		x.Chat = req
	case policy.APIMessages, policy.APICountTokens:
		count := x.Route.API == policy.APICountTokens
		req, err := anthropicapi.ParseMessagesRequest(x.Body, count)
		if err != nil {
			return err
		}
		x.Chat = messages.ToChat(req)
		if req.Metadata != nil {
			x.Labels.userID = req.Metadata.UserID
		}
		if !count {
			if x.Chat.PricedToolUses, err = anthropicapi.PricedToolUses(req); err != nil {
				return err
			}
			x.Chat.CachesForAnHour = anthropicapi.CachesForAnHour(req)
		}
	case policy.APIResponses:
		req, err := responsesapi.ParseRequest(x.Body)
		if err != nil {
			return err
		}
		x.Chat = responses.ToChat(req)
		x.Chat.PricedToolUses = responsesapi.PricedToolUses(req)
	case policy.APIEmbeddings:
		req, err := openaiapi.ParseEmbeddingsRequest(x.Body)
		if err != nil {
			return err
		}
		x.Embeddings = req
	}
	return nil
}

// metadataTags takes the request's tags from its body's metadata, on a
// route that says so: a chat completion's or a Responses request's (a
// map of strings, as their parsers hold it), a Messages request's members
// besides user_id.
func (x *Exchange) metadataTags() *openaiapi.Error {
	meta := x.Chat.Metadata
	if x.Route.API == policy.APIMessages {
		var err *openaiapi.Error
		if meta, err = messagesMetadataTags(x.Body); err != nil {
			return err
		}
	}
	return x.takeMetadataTags(meta)
}
