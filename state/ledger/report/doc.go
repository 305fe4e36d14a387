// Package report answers usage questions from the ledger, for the two usage
// APIs: the admin API's GET /admin/usage/by-tenant, by-app and by-model
// (filters/admin), and a tenant's own usage (filters/usagereport).
//
// Every figure is a sum of ledger rows: the report flushes the process's
// ledger writer first, so a request answered before the call is in it, then
// asks the ledger to sum. Other replicas' writers are not flushed; their
// records arrive within their flush interval.
package report
