// Package state holds no code: its subpackages are the services below the
// filters, which replicas share or which outlive a policy reload — store
// (limits, budgets, runtime keys, the health board), health (provider
// health and breakers) and ledger (usage records and reports). Filters
// depend on them, never on each other.
package state
