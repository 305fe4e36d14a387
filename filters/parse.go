package filters

import (
	"github.com/switchyard/switchyard/apischema/openai"
	"github.com/switchyard/switchyard/configs/policy"
)

// parseBody decodes the request body for the route's API before any body
// hook runs, so every filter sees the same typed request. The body limit
// is Envoy's to enforce (route request_body_buffer_limit), with a 413 in
// the OpenAI envelope; ext_proc never sees a larger body.
func parseBody(x *Exchange) *openai.Error {
	switch x.Route.API {
	case policy.APIChatCompletions:
		req, err := openai.ParseChatRequest(x.Body)
		if err != nil {
			return err
		}
		x.Chat = req
	case policy.APIEmbeddings:
		req, err := openai.ParseEmbeddingsRequest(x.Body)
		if err != nil {
			return err
		}
		x.Embeddings = req
	}
	return nil
}
