// Package state holds no code: its subpackages are the services below the
// filters, which replicas share or which outlive a policy reload — store
// (limits, budgets, runtime keys, the health board), lease (leases of
// the store's limits and budgets, held by a replica), health (provider
// health and breakers), calibration (auto routes' learned thresholds),
// ledger (usage records and reports), events (usage and budget events
// to a Redis Stream and a webhook) and spool (what ext_proc has promised
// and not yet delivered, kept on disk across a crash). Filters depend on
// them, never on each other.
package state
