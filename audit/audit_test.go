package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not one JSON line: %q: %v", b, err)
	}
	delete(m, "time")
	return m
}

func TestEvents(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		emit func(l *Logger)
		want map[string]any
	}{
		{
			name: "request without capture has no prompt",
			emit: func(l *Logger) {
				l.Request(ctx, &Request{RequestID: "r1", Tenant: "acme", App: "web", Key: "acme-web", Route: "chat",
					RequestedModel: "auto", ServedModel: "gpt-4o-mini", Provider: "openai", RoutingReason: "strategy cost-optimized",
					Attempts: 2, Status: 200, PromptSHA256: "ab12"})
			},
			want: map[string]any{"level": "INFO", "msg": "request", "kind": "audit", "process": "extproc",
				"request_id": "r1", "tenant": "acme", "app": "web", "key": "acme-web", "route": "chat",
				"requested_model": "auto", "served_model": "gpt-4o-mini", "provider": "openai",
				"routing_reason": "strategy cost-optimized", "attempts": 2.0, "status": 200.0, "error_type": "", "prompt_sha256": "ab12"},
		},
		{
			name: "request with capture carries the prompt",
			emit: func(l *Logger) {
				l.Request(ctx, &Request{RequestID: "r2", Status: 401, ErrorType: "invalid_request_error", Prompt: "user: hi [email]"})
			},
			want: map[string]any{"level": "INFO", "msg": "request", "kind": "audit", "process": "extproc",
				"request_id": "r2", "tenant": "", "app": "", "key": "", "route": "", "requested_model": "", "served_model": "",
				"provider": "", "routing_reason": "", "attempts": 0.0, "status": 401.0, "error_type": "invalid_request_error",
				"prompt_sha256": "", "prompt": "user: hi [email]"},
		},
		{
			name: "traced request names its trace",
			emit: func(l *Logger) {
				l.Request(ctx, &Request{RequestID: "r4", Status: 200, TraceID: "4bf92f3577b34da6a3ce929d0e0e4736"})
			},
			want: map[string]any{"level": "INFO", "msg": "request", "kind": "audit", "process": "extproc",
				"request_id": "r4", "tenant": "", "app": "", "key": "", "route": "", "requested_model": "", "served_model": "",
				"provider": "", "routing_reason": "", "attempts": 0.0, "status": 200.0, "error_type": "",
				"prompt_sha256": "", "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736"},
		},
		{
			name: "admin action",
			emit: func(l *Logger) { l.Admin(ctx, "r3", "admin", "fault.down", slog.String("provider", "openai")) },
			want: map[string]any{"level": "INFO", "msg": "admin", "kind": "audit", "process": "extproc",
				"request_id": "r3", "actor": "admin", "action": "fault.down", "provider": "openai"},
		},
		{
			name: "config applied",
			emit: func(l *Logger) { l.Config(ctx, "/etc/sy", "v42", nil) },
			want: map[string]any{"level": "INFO", "msg": "config", "kind": "audit", "process": "extproc",
				"dir": "/etc/sy", "result": "applied", "version": "v42"},
		},
		{
			name: "config refused",
			emit: func(l *Logger) { l.Config(ctx, "/etc/sy", "", errors.New("routes.yaml:3:5: bad")) },
			want: map[string]any{"level": "WARN", "msg": "config", "kind": "audit", "process": "extproc",
				"dir": "/etc/sy", "result": "refused", "error": "routes.yaml:3:5: bad"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			tt.emit(New(&buf, "extproc"))
			if diff := cmp.Diff(tt.want, decode(t, buf.Bytes())); diff != "" {
				t.Errorf("event (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNilLoggerDiscards(t *testing.T) {
	var l *Logger
	l.Request(context.Background(), &Request{RequestID: "r"})
	l.Admin(context.Background(), "r", "admin", "x")
	l.Config(context.Background(), "d", "v", nil)
}

func TestOpenAppendsToAPrivateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	for _, v := range []string{"v1", "v2"} {
		l, c, err := Open(path, nil, "xds")
		if err != nil {
			t.Fatal(err)
		}
		l.Config(context.Background(), "d", v, nil)
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) != 2 || decode(t, lines[1])["version"] != "v2" {
		t.Errorf("file holds %q, want two events, the last v2", b)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
}

func TestOpenWithoutPathWritesToStderr(t *testing.T) {
	var stderr bytes.Buffer
	l, _, err := Open("", &stderr, "extproc")
	if err != nil {
		t.Fatal(err)
	}
	l.Admin(context.Background(), "r", "admin", "keys.revoke")
	if got := decode(t, stderr.Bytes())["kind"]; got != "audit" {
		t.Errorf("kind %v, want audit", got)
	}
}

// BenchmarkRequest is the audit event the usage filter writes for every
// request.
func BenchmarkRequest(b *testing.B) {
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	l := New(f, "extproc")
	r := &Request{RequestID: "5f0c6c1e-8c1d-4c52-9b0e-3d7f2a61c9d4", Tenant: "acme", App: "web", Key: "acme-web", Route: "chat",
		RequestedModel: "gpt-4o-mini", ServedModel: "gpt-4o-mini", Provider: "openai", RoutingReason: "client named the model",
		Attempts: 1, Status: 200, PromptSHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		l.Request(ctx, r)
	}
}
