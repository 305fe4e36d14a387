// Package usagereport is the usage_report filter: a tenant's own usage,
// GET /v1/usage[/by-app|by-model|by-key|quality], answered from the ledger by
// [report.Source]. The tenant is always the caller's, whatever the query
// says.
package usagereport
