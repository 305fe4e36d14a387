// Package redact finds sensitive data in prompt text (credentials, email
// addresses, national IDs, card numbers, phone numbers) for the router's
// sensitive-data rules, and masks it in the text the audit trail keeps
// and, where a route or tenant redacts, in what reaches a provider (a
// Masker, whose numbered placeholders an answer can be restored from).
// Scans are bounded in size and stop when the request ends.
package redact
