package policy

import "strconv"

// tenant compiles one entry of the tenants section with its keys.
func (c *compiler) tenant(s *TenantSpec, i int, p *Policy, seen map[string]bool) *Tenant {
	d := display("tenants", i, s.Name)
	ok := c.uniqueName(s.src, d, "tenant", s.Name, seen)
	t := &Tenant{Name: s.Name, Tier: s.Tier, Apps: map[string]*App{}}
	t.Models, ok = c.modelSet(s.src, d, "models", s.Models, p, ok)
	before := len(c.probs)
	t.Budget = c.budget(s.src, d, "budget_usd", s.Budget)
	t.RateLimit = c.rateLimit(s.src, d, "rate_limit", s.RateLimit)
	if s.MaxCostPerRequestUSD != nil {
		t.MaxCostPerRequestMicros, _ = c.usd(s.src, d, "max_cost_per_request_usd", *s.MaxCostPerRequestUSD, false)
	}
	switch s.OverBudget {
	case "", "refuse":
	case "downgrade":
		t.Downgrade = true
	default:
		c.at(s.src, d, "over_budget", "must be refuse or downgrade; got %q", s.OverBudget)
	}
	for j, a := range s.Apps {
		field := "apps[" + strconv.Itoa(j) + "]"
		if a.Name == "" || !nameRE.MatchString(a.Name) || t.Apps[a.Name] != nil {
			c.at(s.src, d, field+".name", "is required, unique within the tenant: letters, digits, '.', '_' or '-'")
			continue
		}
		t.Apps[a.Name] = &App{Name: a.Name, Budget: c.budget(s.src, d, field+".budget_usd", a.Budget), RateLimit: c.rateLimit(s.src, d, field+".rate_limit", a.RateLimit)}
	}
	if s.DefaultApp != "" {
		if t.Apps[s.DefaultApp] == nil {
			c.at(s.src, d, "default_app", "names no app of the tenant (got %q)", s.DefaultApp)
		}
		t.DefaultApp = s.DefaultApp
	}
	if s.Audit != nil {
		t.CapturePrompts = s.Audit.CapturePrompts
	} else {
		t.CapturePrompts = c.capture
	}
	t.TagBudgets = c.tagBudgets(s.src, d, s.TagBudgets)
	t.Redact = c.redaction(s.src, d, s.Redact, "", false)
	ok = ok && len(c.probs) == before
	keyNames := map[string]bool{}
	for j, k := range s.Keys {
		field := "keys[" + strconv.Itoa(j) + "]"
		key := &Key{Name: k.Name, App: k.App, DefaultApp: k.DefaultApp, Tenant: t}
		before := len(c.probs)
		key.Budget = c.budget(s.src, d, field+".budget_usd", k.Budget)
		key.RateLimit = c.rateLimit(s.src, d, field+".rate_limit", k.RateLimit)
		if k.MaxCostPerRequestUSD != nil {
			key.MaxCostPerRequestMicros, _ = c.usd(s.src, d, field+".max_cost_per_request_usd", *k.MaxCostPerRequestUSD, false)
		}
		key.Tags = c.tags(s.src, d, field+".tags", k.Tags)
		if k.App != "" && len(s.Apps) > 0 && t.Apps[k.App] == nil {
			c.at(s.src, d, field+".app", "names no app of the tenant (got %q)", k.App)
		}
		switch {
		case k.DefaultApp == "":
		case k.App != "":
			c.at(s.src, d, field+".default_app", "is for keys bound to no app; this key is bound to %q", k.App)
		case t.Apps[k.DefaultApp] == nil:
			c.at(s.src, d, field+".default_app", "names no app of the tenant (got %q)", k.DefaultApp)
		}
		ok = ok && len(c.probs) == before
		if k.Name == "" || keyNames[k.Name] {
			c.at(s.src, d, field+".name", "is required and unique within the tenant")
			ok = false
		}
		keyNames[k.Name] = true
		h, hok := parseSHA256(k.SHA256)
		if !hok {
			c.at(s.src, d, field+".sha256", "must be 64 hex digits (the SHA-256 of the key, never the key)")
			ok = false
		} else if other := p.keys[h]; other != nil {
			c.at(s.src, d, field+".sha256", "the same key is already %s/%s", other.Tenant.Name, other.Name)
			ok = false
		} else if p.Gateway.HasAdminKey && h == p.Gateway.AdminKeyHash {
			// A tenant's key that is also the admin key would let every
			// holder of it run the admin API.
			c.at(s.src, d, field+".sha256", "is the admin key (gateway.admin_key_sha256); the admin key must be no tenant's key")
			ok = false
		}
		key.Hash = h
		key.Models, ok = c.modelSet(s.src, d, field+".models", k.Models, p, ok)
		if hok {
			p.keys[h] = key
		}
		t.Keys = append(t.Keys, key)
	}
	if tr := s.Routing; tr != nil {
		if tr.Strategy != "" {
			st, known := strategies[tr.Strategy]
			if !known {
				c.at(s.src, d, "routing.strategy", "must be one of cost-optimized, quality-first, latency-first, weighted; got %q", tr.Strategy)
				ok = false
			}
			t.Strategy = st
		}
		if tr.Weights != nil {
			before := len(c.probs)
			w := c.weights(s.src, d, "routing.weights", tr.Weights)
			t.Weights = &w
			ok = ok && len(c.probs) == before
		}
	}
	if !ok {
		return nil
	}
	return t
}

func (c *compiler) budget(src source, d, field string, b *BudgetSpec) Budget {
	out := Budget{FailOpen: true}
	if b == nil {
		return out
	}
	if b.Daily != nil {
		out.DailyMicros, _ = c.usd(src, d, field+".daily", *b.Daily, false)
	}
	if b.Monthly != nil {
		out.MonthlyMicros, _ = c.usd(src, d, field+".monthly", *b.Monthly, false)
	}
	if b.Daily == nil && b.Monthly == nil {
		c.at(src, d, field, "sets neither daily nor monthly")
	}
	out.FailOpen = c.outage(src, d, field+".on_store_outage", b.OnStoreOutage)
	return out
}

func (c *compiler) rateLimit(src source, d, field string, r *RateLimitSpec) RateLimit {
	out := RateLimit{FailOpen: true}
	if r == nil {
		return out
	}
	out = RateLimit{ReplenishRate: r.ReplenishRate, BurstCapacity: r.BurstCapacity, RequestsPerMinute: r.RequestsPerMinute, TokensPerMinute: r.TokensPerMinute}
	if r.ReplenishRate < 0 || r.BurstCapacity < 0 || r.RequestsPerMinute < 0 || r.TokensPerMinute < 0 {
		c.at(src, d, field, "limits must be >= 0")
	}
	if (r.ReplenishRate > 0) != (r.BurstCapacity > 0) {
		c.at(src, d, field, "replenish_rate and burst_capacity go together")
	} else if r.BurstCapacity > 0 && float64(r.BurstCapacity) < r.ReplenishRate {
		c.at(src, d, field+".burst_capacity", "must be >= replenish_rate")
	}
	if !out.Set() {
		c.at(src, d, field, "sets no limit")
	}
	out.FailOpen = c.outage(src, d, field+".on_store_outage", r.OnStoreOutage)
	return out
}

func (c *compiler) outage(src source, d, field, v string) bool {
	switch v {
	case "", "open":
		return true
	case "closed":
		return false
	}
	c.at(src, d, field, "must be open or closed; got %q", v)
	return true
}

func (c *compiler) modelSet(src source, d, field string, names []string, p *Policy, ok bool) (map[string]bool, bool) {
	if names == nil {
		return nil, ok
	}
	set := make(map[string]bool, len(names))
	for j, n := range names {
		if !p.Nameable(n) {
			c.at(src, d, field+"["+strconv.Itoa(j)+"]", "names no model (got %q)", n)
			ok = false
		}
		set[n] = true
	}
	return set, ok
}
