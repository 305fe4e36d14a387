package policy_test

import (
	"testing"

	"github.com/switchyard/switchyard/configs/policy"
)

func TestKeysAndAllowlists(t *testing.T) {
	t.Parallel()
	p, err := policy.Load("testdata/valid")
	if err != nil {
		t.Fatal(err)
	}
	var h [32]byte
	copy(h[:], []byte{0x4f, 0xf4, 0x44, 0xb1})
	tests := []struct {
		name  string
		key   string
		model string
		want  bool
	}{
		{"tenant allowlist allows", "wide", "cheap", true},
		{"tenant allowlist refuses", "wide", "strong", false},
		{"key allowlist narrows", "narrow", "cheap", false},
		{"key allowlist allows", "narrow", "embed", true},
	}
	keys := map[string]*policy.Key{}
	for _, tn := range p.Tenants {
		for _, k := range tn.Keys {
			keys[k.Name] = k
		}
	}
	for _, tt := range tests {
		if got := keys[tt.key].Allows(tt.model); got != tt.want {
			t.Errorf("%s: Allows(%q) = %v, want %v", tt.name, tt.model, got, tt.want)
		}
	}
	if k := p.KeyByHash(keys["wide"].Hash); k == nil || k.Tenant.Name != "acme" || k.App != "web" {
		t.Errorf("KeyByHash = %+v", k)
	}
	if p.KeyByHash(h) != nil {
		t.Error("a made-up hash matched a key")
	}
}

// TestKeyAllowsWithinItsTenant: a key's model list narrows its tenant's and
// never widens it.
func TestKeyAllowsWithinItsTenant(t *testing.T) {
	t.Parallel()
	tenant := &policy.Tenant{Name: "t", Models: map[string]bool{"a": true}}
	tests := []struct {
		key   *policy.Key
		model string
		want  bool
	}{
		{&policy.Key{Tenant: tenant, Models: map[string]bool{"a": true, "b": true}}, "b", false},
		{&policy.Key{Tenant: tenant, Models: map[string]bool{"a": true, "b": true}}, "a", true},
		{&policy.Key{Tenant: tenant}, "a", true},
		{&policy.Key{Tenant: &policy.Tenant{Name: "open"}, Models: map[string]bool{"b": true}}, "b", true},
		{&policy.Key{Tenant: &policy.Tenant{Name: "open"}, Models: map[string]bool{"b": true}}, "a", false},
	}
	for _, tt := range tests {
		if got := tt.key.Allows(tt.model); got != tt.want {
			t.Errorf("key %v of tenant %v: Allows(%q) = %v, want %v", tt.key.Models, tt.key.Tenant.Models, tt.model, got, tt.want)
		}
	}
}
