// Package all links every filter into a binary, the way CoreDNS's
// generated zplugin.go does. Order is not set here but in
// filters/registry.go.
package all

import (
	_ "github.com/switchyard/switchyard/filters/admin"     // the admin API
	_ "github.com/switchyard/switchyard/filters/auth"      // virtual-key authentication
	_ "github.com/switchyard/switchyard/filters/cache"     // the response cache and degraded mode
	_ "github.com/switchyard/switchyard/filters/catalog"   // GET /v1/models
	_ "github.com/switchyard/switchyard/filters/console"   // the operator's console
	_ "github.com/switchyard/switchyard/filters/feedback"  // POST /v1/feedback
	_ "github.com/switchyard/switchyard/filters/judge"     // grades auto routing's weaker answers
	_ "github.com/switchyard/switchyard/filters/quota"     // rate limits and budgets
	_ "github.com/switchyard/switchyard/filters/router"    // model and provider choice
	_ "github.com/switchyard/switchyard/filters/translate" // provider protocols
	_ "github.com/switchyard/switchyard/filters/usage"     // usage records

	// GET /v1/usage, a tenant's own usage
	_ "github.com/switchyard/switchyard/filters/usagereport"
)
