package cachespec

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/filters/filterspec"
)

func TestParseArgs(t *testing.T) {
	t.Parallel()
	def := Default()
	if def.TTL != 5*time.Minute || def.MemoryTTL != 15*time.Second {
		t.Errorf("defaults %+v; the specification keeps answers 15 s in memory and 5 min in Redis", def)
	}
	for _, tc := range []struct {
		name    string
		ref     filterspec.Ref
		want    func(*Args)
		wantErr string
	}{
		{name: "no arguments", ref: filterspec.Ref{Name: "cache"}, want: func(*Args) {}},
		{name: "every argument", ref: filterspec.Ref{Name: "cache", Args: map[string]any{
			"ttl": "10m", "memory_ttl": "30s", "stale_for": "0s", "deterministic_only": false, "max_memory": "2MiB", "tenants": []any{"acme"}}},
			want: func(a *Args) {
				*a = Args{TTL: 10 * time.Minute, MemoryTTL: 30 * time.Second, MaxMemory: 2 << 20, Tenants: []string{"acme"}}
			}},
		{name: "shorthand", ref: filterspec.Ref{Name: "cache", Shorthand: []string{"5m"}}, wantErr: "no shorthand"},
		{name: "unknown argument", ref: filterspec.Ref{Name: "cache", Args: map[string]any{"size": "1MiB"}}, wantErr: "unknown field size"},
		{name: "not a size", ref: filterspec.Ref{Name: "cache", Args: map[string]any{"max_memory": "lots"}}, wantErr: "cache args"},
		{name: "ttl too long", ref: filterspec.Ref{Name: "cache", Args: map[string]any{"ttl": "48h"}}, wantErr: "ttl must be between 1s and 24h"},
		{name: "memory_ttl above ttl", ref: filterspec.Ref{Name: "cache", Args: map[string]any{"ttl": "1m", "memory_ttl": "2m"}}, wantErr: "memory_ttl must be above 0 and at most ttl"},
		{name: "stale_for negative", ref: filterspec.Ref{Name: "cache", Args: map[string]any{"stale_for": "-1s"}}, wantErr: "stale_for"},
		{name: "memory below the largest answer", ref: filterspec.Ref{Name: "cache", Args: map[string]any{"max_memory": "512KiB"}}, wantErr: "max_memory must be between 1MiB and 16GiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.ref)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := Default()
			tc.want(&want)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("args (-want +got):\n%s", d)
			}
		})
	}
}
