// Package manage is what an operator changes on a running gateway,
// whichever surface the operator uses: the admin API (filters/admin) and
// the console (filters/console) both call it, so a key issued or a drill
// started means the same thing, with the same checks and the same
// refusals, from either.
//
//   - [Gate] checks the admin key, known to the policy by its SHA-256
//     only, and throttles the addresses that present wrong ones.
//   - [IssueKey], [ListKeys], [RotateKey] and [RevokeKey] manage the
//     virtual keys issued at runtime, held in the store's key ring so
//     that every replica sees a change at once. A secret is returned once,
//     by issue and rotate, and never stored, listed or logged.
//   - [SetDrill] starts and ends fault drills on every replica.
//   - [Domains] and [ResetDomain] show and reset what the routes that
//     learn domain priors know of a tenant's domains (state/priors).
//
// Refusals are *openai.Error values, which both surfaces render in their
// own way. Auditing stays with the surfaces: they know who acted.
package manage
