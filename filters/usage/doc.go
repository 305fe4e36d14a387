// Package usage is the filter that records what every request consumed.
//
// Its Done hook runs once per request whatever happened — served, refused,
// failed or cut short by the client — after translate has priced the
// answer, and turns the exchange into one [ledger.Record]. The record goes
// to the durable ledger (through its batching writer), to a structured log
// line, to the Prometheus metrics and, with the prompt's hash, to the audit
// log. See README.md for the fields, the metrics and the audit event.
package usage
