package audit

import (
	"context"
	"io"
	"log/slog"
	"os"
	"time"
)

// Logger writes audit events. A nil Logger discards them, for tools that
// only validate a policy.
type Logger struct {
	l *slog.Logger
}

// New returns a Logger writing JSON lines to w; process names the writer
// in every event.
func New(w io.Writer, process string) *Logger {
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})
	return &Logger{l: slog.New(h).With(slog.String("kind", "audit"), slog.String("process", process))}
}

// Open returns the Logger of a process: appending to the file at path
// (created readable by its owner only, as it may hold prompts), or writing
// to stderr when path is empty. The closer closes the file.
func Open(path string, stderr io.Writer, process string) (*Logger, io.Closer, error) {
	if path == "" {
		return New(stderr, process), io.NopCloser(nil), nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, err
	}
	return New(f, process), f, nil
}

// Request is the audit event of one model request.
type Request struct {
	RequestID string
	Tenant    string
	App       string
	// Key is the name of the caller's virtual key, never the key.
	Key            string
	Route          string
	RequestedModel string
	ServedModel    string
	Provider       string
	// RoutingReason says why the request went where it did.
	RoutingReason string
	Attempts      int
	Status        int
	ErrorType     string
	// PromptSHA256 is the hex SHA-256 of the request body as the client
	// sent it, so a client can prove which prompt it sent by hashing its
	// own body.
	PromptSHA256 string
	// Prompt is the prompt with secrets and personal data masked, set only
	// when the tenant's policy captures prompts.
	Prompt string
	// TraceID names the request's trace; empty when tracing is off.
	TraceID string
	// Tags and Session are the request's billing tags and client
	// session, when it has them.
	Tags    map[string]string
	Session string
	// Redacted counts the sensitive spans masked in the request before
	// it reached a provider, by kind; never the values.
	Redacted map[string]int
}

// Request records one model request.
func (l *Logger) Request(ctx context.Context, r *Request) {
	if l == nil {
		return
	}
	attrs := []slog.Attr{
		slog.String("request_id", r.RequestID),
		slog.String("tenant", r.Tenant), slog.String("app", r.App), slog.String("key", r.Key),
		slog.String("route", r.Route),
		slog.String("requested_model", r.RequestedModel), slog.String("served_model", r.ServedModel),
		slog.String("provider", r.Provider), slog.String("routing_reason", r.RoutingReason),
		slog.Int("attempts", r.Attempts), slog.Int("status", r.Status), slog.String("error_type", r.ErrorType),
		slog.String("prompt_sha256", r.PromptSHA256),
	}
	if r.Prompt != "" {
		attrs = append(attrs, slog.String("prompt", r.Prompt))
	}
	if r.TraceID != "" {
		attrs = append(attrs, slog.String("trace_id", r.TraceID))
	}
	if len(r.Tags) > 0 {
		attrs = append(attrs, slog.Any("tags", r.Tags))
	}
	if r.Session != "" {
		attrs = append(attrs, slog.String("session", r.Session))
	}
	if len(r.Redacted) > 0 {
		attrs = append(attrs, slog.Any("redacted", r.Redacted))
	}
	// One event per request: the record is built here without a caller's
	// PC, which Logger.LogAttrs takes with runtime.Callers for a source the
	// handler never prints (a quarter of this function's CPU).
	h := l.l.Handler()
	if !h.Enabled(ctx, slog.LevelInfo) {
		return
	}
	rec := slog.NewRecord(time.Now(), slog.LevelInfo, "request", 0)
	rec.AddAttrs(attrs...)
	_ = h.Handle(ctx, rec)
}

// Admin records an admin action: what was done, by whom, to what. actor
// names the credential's holder ("admin" for the admin key), never the
// credential.
func (l *Logger) Admin(ctx context.Context, requestID, actor, action string, attrs ...slog.Attr) {
	if l == nil {
		return
	}
	l.l.LogAttrs(ctx, slog.LevelInfo, "admin", append([]slog.Attr{
		slog.String("request_id", requestID), slog.String("actor", actor), slog.String("action", action),
	}, attrs...)...)
}

// Config results.
const (
	// ConfigApplied is a policy that took effect.
	ConfigApplied = "applied"
	// ConfigRefused is a policy that was refused; the previous one serves on.
	ConfigRefused = "refused"
)

// Config records a policy load or reload: the version applied, or the
// reason it was refused.
func (l *Logger) Config(ctx context.Context, dir, version string, err error) {
	if l == nil {
		return
	}
	if err != nil {
		l.l.LogAttrs(ctx, slog.LevelWarn, "config", slog.String("dir", dir), slog.String("result", ConfigRefused),
			slog.String("error", err.Error()))
		return
	}
	l.l.LogAttrs(ctx, slog.LevelInfo, "config", slog.String("dir", dir), slog.String("result", ConfigApplied),
		slog.String("version", version))
}
