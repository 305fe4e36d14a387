package cache

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/state/answercache"
)

func TestParseArgs(t *testing.T) {
	t.Parallel()
	def := policy.DefaultCacheArgs()
	if def.TTL != 5*time.Minute || def.MemoryTTL != 15*time.Second {
		t.Errorf("defaults %+v; the specification keeps answers 15 s in memory and 5 min in Redis", def)
	}
	for _, tc := range []struct {
		name    string
		ref     policy.FilterRef
		want    func(*policy.CacheArgs)
		wantErr string
	}{
		{name: "no arguments", ref: policy.FilterRef{Name: "cache"}, want: func(*policy.CacheArgs) {}},
		{name: "every argument", ref: policy.FilterRef{Name: "cache", Args: map[string]any{
			"ttl": "10m", "memory_ttl": "30s", "stale_for": "0s", "deterministic_only": false, "max_memory": "2MiB", "tenants": []any{"acme"}}},
			want: func(a *policy.CacheArgs) {
				*a = policy.CacheArgs{TTL: 10 * time.Minute, MemoryTTL: 30 * time.Second, MaxMemory: 2 << 20, Tenants: []string{"acme"}}
			}},
		{name: "shorthand", ref: policy.FilterRef{Name: "cache", Shorthand: []string{"5m"}}, wantErr: "no shorthand"},
		{name: "unknown argument", ref: policy.FilterRef{Name: "cache", Args: map[string]any{"size": "1MiB"}}, wantErr: "field size not found"},
		{name: "not a size", ref: policy.FilterRef{Name: "cache", Args: map[string]any{"max_memory": "lots"}}, wantErr: "cache args"},
		{name: "ttl too long", ref: policy.FilterRef{Name: "cache", Args: map[string]any{"ttl": "48h"}}, wantErr: "ttl must be between 1s and 24h"},
		{name: "memory_ttl above ttl", ref: policy.FilterRef{Name: "cache", Args: map[string]any{"ttl": "1m", "memory_ttl": "2m"}}, wantErr: "memory_ttl must be above 0 and at most ttl"},
		{name: "stale_for negative", ref: policy.FilterRef{Name: "cache", Args: map[string]any{"stale_for": "-1s"}}, wantErr: "stale_for"},
		{name: "memory below the largest answer", ref: policy.FilterRef{Name: "cache", Args: map[string]any{"max_memory": "512KiB"}}, wantErr: "max_memory must be between 1MiB and 16GiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := policy.ParseCacheArgs(tc.ref)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := policy.DefaultCacheArgs()
			tc.want(&want)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("args (-want +got):\n%s", d)
			}
		})
	}
}

// TestMaxMemoryFromThePolicy: the route's max_memory bounds what the
// filter keeps in memory.
func TestMaxMemoryFromThePolicy(t *testing.T) {
	t.Parallel()
	ref := policy.FilterRef{Name: "cache", Args: map[string]any{"max_memory": "1MiB"}}
	f, err := New(ref, filters.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	c := f.(*Filter)
	now := time.Now()
	for i := range 40 {
		c.mem.Put(strings.Repeat("k", 63)+string(rune('A'+i)), answercache.Entry{Body: make([]byte, 64<<10), Stored: now})
	}
	if b := c.mem.Bytes(); b > 1<<20 || b < 900<<10 {
		t.Errorf("40 answers of 64 KiB under max_memory 1MiB: memory holds %d bytes", b)
	}
}
