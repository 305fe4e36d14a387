package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestRevokedKeysAreDeleted: a revoked key's record stays for the
// retention (the admin API shows when it was revoked), then the store
// deletes it and the tenant's index forgets it; a live key stays.
func TestRevokedKeysAreDeleted(t *testing.T) {
	ctx := context.Background()
	const retention = 300 * time.Millisecond
	clock := newFakeClock(t0)
	client := redis.NewClient(&redis.Options{Addr: sharedRedis.Addr()})
	t.Cleanup(func() { _ = client.Close() })
	prefix := isolated("revoked-test")
	stores := map[string]struct {
		s    Store
		wait func()
	}{
		// Memory follows its clock; Redis expires the record in its own time.
		"memory": {NewMemory(Options{Clock: clock, RevokedKeyRetention: retention}), func() { clock.Advance(retention) }},
		"redis":  {NewRedis(client, Options{Prefix: prefix, RevokedKeyRetention: retention}), func() { time.Sleep(2 * retention) }},
	}
	for name, st := range stores {
		t.Run(name, func(t *testing.T) {
			gone, kept := KeyRecord{Hash: HashKey("sk-gone"), Name: "gone", Tenant: "acme", Created: t0}, KeyRecord{Hash: HashKey("sk-kept"), Name: "kept", Tenant: "acme", Created: t0}
			for _, rec := range []KeyRecord{gone, kept} {
				if err := st.s.PutKey(ctx, rec); err != nil {
					t.Fatal(err)
				}
			}
			if err := st.s.RevokeKey(ctx, gone.Hash); err != nil {
				t.Fatal(err)
			}
			if rec, err := st.s.Key(ctx, gone.Hash); err != nil || !rec.Revoked {
				t.Fatalf("just revoked: %+v, %v; want the revoked record", rec, err)
			}
			st.wait()
			if _, err := st.s.Key(ctx, gone.Hash); !errors.Is(err, ErrNotFound) {
				t.Errorf("after the retention: %v, want ErrNotFound", err)
			}
			list, err := st.s.TenantKeys(ctx, "acme")
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 1 || list[0].Name != "kept" {
				t.Errorf("tenant keys after the retention: %+v, want only the live one", list)
			}
			if _, err := st.s.Key(ctx, kept.Hash); err != nil {
				t.Errorf("the live key: %v", err)
			}
		})
	}
	// Redis's tenant index drops the hash of the deleted record.
	n, err := client.SCard(ctx, NewRedis(client, Options{Prefix: prefix}).keyIndex("acme")).Result()
	if err != nil || n != 1 {
		t.Errorf("redis tenant index holds %d hashes (%v), want 1", n, err)
	}
}
