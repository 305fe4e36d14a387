// Package ledger keeps the durable record of what every request consumed:
// one row per request, in SQLite (the embedded default, through the pure-Go
// modernc.org/sqlite driver) or PostgreSQL (through pgx), and the totals the
// usage API reports.
//
// [DB] is the [Ledger] on either engine. Both share one logical schema,
// created and upgraded by versioned SQL migrations embedded in the binary and
// applied when the ledger is opened. Inserts are idempotent by request ID, so
// a batch written twice — after a retry or a restart — counts once.
//
// [Writer] keeps the request path off the database: [Writer.Write] only
// queues, and a background loop writes batches in one transaction each. While
// the database is unavailable the records stay queued (up to a bound) and are
// retried with backoff; every record that cannot be kept is counted in
// switchyard_ledger_dropped_records_total and logged, never dropped silently.
//
// [DB.Query] sums the rows that match a [Filter], grouped by any of the
// [Dimension]s; the figures are, by construction and by test, the sums of the
// rows [DB.Records] returns for the same filter.
//
// README.md in this directory documents the schema, the migrations, the
// batching and outage semantics and the configuration.
package ledger
