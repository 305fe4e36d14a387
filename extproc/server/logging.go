package server

import (
	"context"
	"log/slog"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
)

type requestIDKey struct{}

// withRequestID marks ctx as the context of one request's stream.
func withRequestID(ctx context.Context, h *extprocv3.HttpHeaders) context.Context {
	for _, kv := range h.GetHeaders().GetHeaders() {
		if kv.GetKey() == "x-request-id" {
			id := kv.GetValue()
			if id == "" {
				id = string(kv.GetRawValue())
			}
			return context.WithValue(ctx, requestIDKey{}, id)
		}
	}
	return ctx
}

// LogHandler wraps h so that every line logged with a request's context
// carries its request_id, whichever filter or library logs it. A line that
// names its request itself is left as it is.
func LogHandler(h slog.Handler) slog.Handler { return requestIDHandler{h} }

type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	id, ok := ctx.Value(requestIDKey{}).(string)
	if ok && id != "" && !hasRequestID(r) {
		r = r.Clone()
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

func hasRequestID(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		found = a.Key == "request_id"
		return !found
	})
	return found
}

func (h requestIDHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(as)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}
