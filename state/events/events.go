// Package events publishes what consumers outside the gateway act on:
// one response.generated event per finished request (the ledger row's
// figures) and one budget.threshold event per budget threshold crossed,
// to a Redis Stream bounded by MAXLEN and, optionally, to a webhook whose
// calls carry an HMAC signature.
//
// Each event has an ID (a usage event's is its request ID) that makes
// publishing idempotent on the stream: a batch retried after its reply was
// lost adds nothing twice, so a consumer reads one event per ledger row.
// The webhook is at least once: a receiver drops an ID it has seen.
package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/switchyard/switchyard/state/ledger"
)

// Event types.
const (
	// Type is the type of a usage event, one per finished request.
	Type = "response.generated"
)

// Message is one event on its way out: its ID, its type and its JSON.
type Message struct {
	ID   string
	Type string
	JSON []byte
}

// Target takes messages: a Redis Stream or a webhook. Publish returns how
// many messages were new to the target. An error that matches
// [ledger.ErrUnavailable] means nothing was taken and a retry is safe; any
// other error means the target refused the messages.
type Target interface {
	Publish(ctx context.Context, msgs []Message) (int, error)
}

// Usage is a usage event: one finished request, as consumers read it. It
// never holds a key, only the key's name.
type Usage struct {
	Type         string    `json:"type"`
	RequestID    string    `json:"request_id"`
	Time         time.Time `json:"time"`
	Tenant       string    `json:"tenant"`
	App          string    `json:"app,omitempty"`
	KeyName      string    `json:"key_name,omitempty"`
	Route        string    `json:"route,omitempty"`
	Model        string    `json:"model"`
	ServedModel  string    `json:"served_model,omitempty"`
	Provider     string    `json:"provider,omitempty"`
	Stream       bool      `json:"stream"`
	Attempts     int       `json:"attempts"`
	InputTokens  int64     `json:"input_tokens"`
	OutputTokens int64     `json:"output_tokens"`
	CachedTokens int64     `json:"cached_tokens"`
	CostMicros   int64     `json:"cost_micros"`
	// PriceSource is where CostMicros's price comes from: catalog,
	// pattern or estimated.
	PriceSource string `json:"price_source,omitempty"`
	// SavedMicros is what a response cache hit saved (provider "cache").
	SavedMicros int64   `json:"saved_micros,omitempty"`
	LatencyMS   float64 `json:"latency_ms"`
	Status      int     `json:"status"`
	ErrorType   string  `json:"error_type,omitempty"`
	// Tags are the request's billing tags; SessionID the client session
	// it belongs to (the specification's sessionId).
	Tags      map[string]string `json:"tags,omitempty"`
	SessionID string            `json:"session_id,omitempty"`
}

// Of is the usage event of a ledger row.
func Of(r *ledger.Record) Usage {
	return Usage{
		Type: Type, RequestID: r.RequestID, Time: r.Time.UTC(), Tenant: r.Tenant, App: r.App, KeyName: r.KeyName,
		Route: r.Route, Model: r.RequestedModel, ServedModel: r.ServedModel, Provider: r.Provider, Stream: r.Stream,
		Attempts: r.Attempts, InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, CachedTokens: r.CachedTokens,
		CostMicros: r.CostMicros, PriceSource: r.PriceSource, SavedMicros: r.SavedMicros, LatencyMS: float64(r.Latency.Microseconds()) / 1000, Status: r.Status, ErrorType: r.ErrorType,
		Tags: r.Tags, SessionID: r.SessionID,
	}
}

// Records makes a ledger sink of t: each record goes out as its usage
// event, so a [ledger.Writer] batches and retries the events as it does
// the ledger's rows.
func Records(t Target) ledger.Sink { return records{t} }

type records struct{ t Target }

func (s records) Insert(ctx context.Context, rs []ledger.Record) (int, error) {
	msgs := make([]Message, len(rs))
	for i := range rs {
		b, err := json.Marshal(Of(&rs[i]))
		if err != nil {
			return 0, fmt.Errorf("events: encoding %s: %w", rs[i].RequestID, err)
		}
		msgs[i] = Message{ID: rs[i].RequestID, Type: Type, JSON: b}
	}
	return s.t.Publish(ctx, msgs)
}

// Decode reads a usage event from a stream entry's values.
func Decode(values map[string]any) (Usage, error) {
	var e Usage
	return e, decode(values, &e)
}

func decode(values map[string]any, v any) error {
	raw, ok := values["event"].(string)
	if !ok {
		return fmt.Errorf("events: entry without an event field (fields: %d)", len(values))
	}
	if err := json.Unmarshal([]byte(raw), v); err != nil {
		return fmt.Errorf("events: %w", err)
	}
	return nil
}

func unavailable(err error) bool { return errors.Is(err, ledger.ErrUnavailable) }
