package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/state/ledger"
)

// openLedger opens the usage ledger the policy names and starts its
// batching writer. The ledger is chosen at startup; a reload that changes
// gateway.ledger takes effect at the next restart (logged then).
func openLedger(ctx context.Context, p *policy.Policy, reg prometheus.Registerer, log *slog.Logger) (*ledger.DB, *ledger.Writer, error) {
	c := ledger.Config{Driver: p.Gateway.Ledger.Driver, DSN: p.Gateway.Ledger.Path}
	if ref := p.Gateway.Ledger.DSN; ref != nil {
		dsn, err := secrets{}.Resolve(*ref)
		if err != nil {
			return nil, nil, fmt.Errorf("ledger dsn: %w", err)
		}
		c.DSN = dsn
	}
	db, err := ledger.Open(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	m := ledger.NewMetrics(reg)
	w := ledger.NewWriter(db, ledger.WriterOptions{
		BatchSize:     p.Gateway.Ledger.BatchSize,
		FlushInterval: p.Gateway.Ledger.FlushInterval,
		Capacity:      p.Gateway.Ledger.Buffer,
		Metrics:       m,
		Logger:        log,
	})
	log.Info("usage ledger open", slog.String("driver", db.Driver()))
	return db, w, nil
}
