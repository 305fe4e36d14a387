package anthropicapi

// CacheControl marks where a prompt prefix Anthropic is to cache ends.
type CacheControl struct {
	Type string `json:"type"`
	// TTL is how long the entry is kept: "5m" (the default) or "1h",
	// whose writes cost more.
	TTL string `json:"ttl,omitempty"`
}

// long reports whether c asks for more than the default lifetime. A
// lifetime the gateway does not know counts as long: its writes are then
// charged at the dearest rate, not below what Anthropic bills.
func (c *CacheControl) long() bool { return c != nil && c.TTL != "" && c.TTL != "5m" }

// CachesForAnHour reports whether r asks anywhere (the request, a system
// block, a tool, a block of a message or of a tool result) to keep a
// prompt-cache entry for an hour. A usage that reports cache writes
// without their lifetime is then charged at the hour's rate.
func CachesForAnHour(r *MessagesRequest) bool {
	if r.CacheControl.long() || anyLong(r.System) {
		return true
	}
	for _, t := range r.Tools {
		if t.CacheControl.long() {
			return true
		}
	}
	for _, m := range r.Messages {
		if anyLong(m.Content) {
			return true
		}
	}
	return false
}

// anyLong reports whether a block of bs, or of a tool result among them,
// asks for a long cache lifetime.
func anyLong(bs []Block) bool {
	for _, b := range bs {
		if b.CacheControl.long() || anyLong(b.Content) {
			return true
		}
	}
	return false
}
