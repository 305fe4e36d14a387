package extprocapp

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard/switchyard/state/spool"
)

// Names of the disk spools in -spool-dir.
const (
	ledgerSpool = "ledger"      // usage records the ledger writer has not written
	heldSpool   = "ledger-held" // records of answers released before their final record
	budgetSpool = "budget"      // budget commits the store could not take
)

// disk is one opened spool and the records a previous process left in it.
type disk struct {
	spool *spool.Spool
	left  [][]byte
}

// openSpools opens the process's disk spools in dir; with dir empty there
// are none, and what waits to be written lives in memory only (lost if the
// process dies). A spool held by another live process is an error: replicas
// need a directory each.
func openSpools(dir string, maxBytes int64, reg prometheus.Registerer, log *slog.Logger) (map[string]disk, func(), error) {
	out := map[string]disk{}
	closeAll := func() {
		for _, d := range out {
			_ = d.spool.Close()
		}
	}
	if dir == "" {
		log.Warn("no -spool-dir: usage records and budget commits not yet written are lost if the process dies")
		return out, closeAll, nil
	}
	m := spool.NewMetrics(reg)
	for _, name := range []string{ledgerSpool, heldSpool, budgetSpool} {
		s, left, err := spool.Open(dir, name, spool.Options{MaxBytes: maxBytes, Metrics: m})
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		out[name] = disk{spool: s, left: left}
	}
	log.Info("spools open", slog.String("dir", dir),
		slog.Int("ledger_records", len(out[ledgerSpool].left)), slog.Int("held_records", len(out[heldSpool].left)),
		slog.Int("budget_commits", len(out[budgetSpool].left)))
	return out, closeAll, nil
}
