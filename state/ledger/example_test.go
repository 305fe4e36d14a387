package ledger_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/switchyard/switchyard/state/ledger"
)

// The usage filter writes one record per request through a Writer; the
// usage API sums them with Query.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "ledger-example-")
	defer os.RemoveAll(dir)

	db, err := ledger.Open(ctx, ledger.Config{Driver: ledger.DriverSQLite, DSN: filepath.Join(dir, "usage.db")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	w := ledger.NewWriter(db, ledger.WriterOptions{})

	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	w.Write(ledger.Record{RequestID: "r1", Time: at, Tenant: "acme", App: "web", RequestedModel: "gpt-4o",
		ServedModel: "gpt-4o", Provider: "openai", Attempts: 1, Status: 200,
		InputTokens: 1000, OutputTokens: 200, CostMicros: 4_500})
	w.Write(ledger.Record{RequestID: "r2", Time: at.Add(time.Minute), Tenant: "acme", App: "web",
		RequestedModel: "gpt-4o", Status: 429, ErrorType: "rate_limit_exceeded"})
	w.Write(ledger.Record{RequestID: "r1", Time: at, Tenant: "acme"}) // a replay: counted once
	if err := w.Close(ctx); err != nil {
		fmt.Println(err)
		return
	}

	rows, err := db.Query(ctx, ledger.Filter{From: at, To: at.Add(time.Hour), Tenant: "acme"}, ledger.ByModel)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range rows {
		fmt.Printf("%s: %d requests, %d errors, %d+%d tokens, %d µUSD\n",
			r.Model, r.Requests, r.Errors, r.InputTokens, r.OutputTokens, r.CostMicros)
	}
	// Output:
	// gpt-4o: 2 requests, 1 errors, 1000+200 tokens, 4500 µUSD
}
