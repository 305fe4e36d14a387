package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/switchyard/switchyard/apischema/openaiapi"
)

// maxStackBytes bounds the stack a panic's log line carries.
const maxStackBytes = 8 << 10

// recovered turns a panic on one stream into that request's 500: it is
// logged with the request ID and its stack, counted, and answered with the
// OpenAI envelope when the stream can still carry an answer. The process
// and every other request go on. kind names the stream ("request" or
// "attempt").
func (s *Server) recovered(ctx context.Context, stream extprocv3.ExternalProcessor_ProcessServer, p any, kind, id string) *openaiapi.Error {
	s.metrics.panics.WithLabelValues(kind).Inc()
	stack := debug.Stack()
	if pp, ok := p.(phasePanic); ok {
		p, stack = pp.value, pp.stack
	}
	if len(stack) > maxStackBytes {
		stack = stack[:maxStackBytes]
	}
	s.log.LogAttrs(ctx, slog.LevelError, "panic while processing a request; answered 500, the process goes on",
		slog.String("request_id", id), slog.String("stream", kind),
		slog.String("panic", fmt.Sprint(p)), slog.String("stack", string(stack)))
	e := openaiapi.Errorf(http.StatusInternalServerError, openaiapi.TypeServer, "internal_error",
		"the gateway failed on this request (request id %s); retry it", id)
	// A stream whose answer has begun cannot take an immediate response:
	// Envoy then resets it, which the client sees as a cut answer.
	_ = stream.Send(errorResponse(id, e, nil))
	return e
}
