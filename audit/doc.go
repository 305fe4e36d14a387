// Package audit writes the gateway's audit trail: who called which model
// through which route, why the request went where it did and how it ended;
// every admin action; every policy load and reload.
//
// Audit events are JSON lines, each with "kind":"audit" and the event name
// as "msg" ("request", "admin", "config"). A process writes them to its
// stderr beside its other logs, where the kind tells them apart, or to a
// file of their own (the -audit-log flag of extproc and xds). They are
// written whatever the process's log level: an audit trail with gaps is
// not one.
//
// A request event names the caller by tenant, app and key name, never the
// key, and the prompt by its SHA-256. The prompt itself is recorded only
// for tenants whose policy turns capture on, and then masked by the caller
// of this package (see filters/usage).
package audit
