// Package policy loads, validates and compiles Switchyard's YAML policy.
//
// A policy is a directory of YAML files (providers, models, routes, tenants,
// gateway settings). Every file may hold any top-level section; lists are
// concatenated in file-name order and the gateway section may appear once.
//
// Loading has two stages, as in ratelimit's YamlRoot→impl and ai-gateway's
// Config→RuntimeConfig: the files are decoded strictly into a [Spec] (unknown
// fields are errors), then compiled into an immutable [Policy] that resolves
// names, builds indexes and converts prices to integer micro-USD. Every
// problem found is reported with the file, line, column and field, and all of
// them are reported at once. A caller swaps policies atomically and keeps the
// last good one when a load fails.
package policy
