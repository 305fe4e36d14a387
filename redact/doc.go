// Package redact finds sensitive data in prompt text (credentials, email
// addresses, national IDs, card numbers, phone numbers) for the router's
// sensitive-data rules, and masks it in the text the audit trail keeps.
// Scans are bounded in size and stop when the request ends.
package redact
