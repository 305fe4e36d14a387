package server

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
)

func TestLogHandlerAddsTheRequestID(t *testing.T) {
	stream := withRequestID(context.Background(), &extprocv3.HttpHeaders{Headers: &corev3.HeaderMap{Headers: []*corev3.HeaderValue{
		{Key: ":path", RawValue: []byte("/v1/chat/completions")},
		{Key: "x-request-id", RawValue: []byte("rid-7")},
	}}})
	tests := []struct {
		name string
		ctx  context.Context
		log  func(l *slog.Logger, ctx context.Context)
		want string // the line's request_id
	}{
		{"a line of the request's stream", stream, func(l *slog.Logger, ctx context.Context) { l.InfoContext(ctx, "x") }, "rid-7"},
		{"a line that names its request is left alone", stream, func(l *slog.Logger, ctx context.Context) {
			l.InfoContext(ctx, "x", slog.String("request_id", "own"))
		}, "own"},
		{"a line of no request", context.Background(), func(l *slog.Logger, ctx context.Context) { l.InfoContext(ctx, "x") }, ""},
		{"a logger with attributes", stream, func(l *slog.Logger, ctx context.Context) { l.With("k", "v").InfoContext(ctx, "x") }, "rid-7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			tt.log(slog.New(LogHandler(slog.NewJSONHandler(&buf, nil))), tt.ctx)
			if n := strings.Count(buf.String(), `"request_id"`); n > 1 {
				t.Fatalf("request_id %d times in %s", n, buf.String())
			}
			var line map[string]any
			if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
				t.Fatal(err)
			}
			got, _ := line["request_id"].(string)
			if got != tt.want {
				t.Errorf("request_id %q, want %q (line %s)", got, tt.want, buf.String())
			}
		})
	}
}
