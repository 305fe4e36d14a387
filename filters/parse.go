package filters

import (
	"net/http"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters/openai"
)

// parseBody decodes the request body for the route's API before any body
// hook runs, so every filter sees the same typed request.
func parseBody(x *Exchange) *openai.Error {
	if int64(len(x.Body)) > x.Policy.Gateway.MaxRequestBytes {
		return openai.Errorf(http.StatusRequestEntityTooLarge, openai.TypeInvalidRequest, "request_too_large",
			"the request body is %d bytes; the limit is %d", len(x.Body), x.Policy.Gateway.MaxRequestBytes)
	}
	if x.Route.API == policy.APIChatCompletions {
		req, err := openai.ParseChatRequest(x.Body)
		if err != nil {
			return err
		}
		x.Chat = req
	}
	return nil
}
