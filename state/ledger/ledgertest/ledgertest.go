// Package ledgertest holds the fixtures the usage report's tests share: a
// throwaway SQLite ledger with its writer, and a few records of two
// tenants.
package ledgertest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchyard/switchyard/state/ledger"
)

// T0 is the time of the first of [Records].
var T0 = time.Date(2026, 5, 6, 7, 0, 0, 0, time.UTC)

// Records are four requests: three of tenant acme (two apps, two models,
// two teams' tags, one session, one refused) and one of globex.
var Records = []ledger.Record{
	{RequestID: "a", Time: T0, Tenant: "acme", App: "web", KeyName: "acme-web", ServedModel: "gpt", Status: 200, InputTokens: 10, OutputTokens: 5, CostMicros: 700,
		Tags: map[string]string{"team": "search"}, SessionID: "s1"},
	{RequestID: "b", Time: T0.Add(time.Minute), Tenant: "acme", App: "batch", KeyName: "acme-batch", ServedModel: "claude", Status: 200, InputTokens: 20, OutputTokens: 8, CachedTokens: 4, CostMicros: 1300,
		Tags: map[string]string{"team": "ads", "feature": "summarize"}},
	{RequestID: "c", Time: T0.Add(2 * time.Minute), Tenant: "acme", App: "web", KeyName: "acme-web", RequestedModel: "gpt", Status: 429, ErrorType: "rate_limit_error",
		SessionID: "s1"},
	{RequestID: "d", Time: T0.Add(3 * time.Minute), Tenant: "globex", App: "web", KeyName: "g", ServedModel: "gpt", Status: 200, InputTokens: 1, OutputTokens: 1, CostMicros: 12,
		Tags: map[string]string{"team": "search"}},
}

// WithWriter opens a SQLite ledger and a writer whose flush interval is
// long enough that only an explicit flush writes; both close with the test.
func WithWriter(t *testing.T) (*ledger.DB, *ledger.Writer) {
	t.Helper()
	db, err := ledger.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "usage.db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	w := ledger.NewWriter(db, ledger.WriterOptions{FlushInterval: time.Hour, BatchSize: 1000})
	t.Cleanup(func() {
		_ = w.Close(context.Background())
		_ = db.Close()
	})
	return db, w
}
