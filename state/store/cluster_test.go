package store

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard/switchyard/state/store/redistest"
)

// TestRedisClusterConformance runs the suite on a one-node Redis Cluster
// through a cluster client. Redis 7 checks every key a "#!lua" script
// touches against the slot of its declared keys, so this proves the hash-tag
// layout: a script reaching outside its slot fails with a cross-slot error.
func TestRedisClusterConformance(t *testing.T) {
	srv, err := redistest.New()
	if err != nil {
		t.Fatal(err)
	}
	srv.Extra = []string{"--cluster-enabled", "yes", "--cluster-config-file", srv.Dir() + "/nodes.conf"}
	t.Cleanup(srv.Close)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer admin.Close()
	ctx := context.Background()
	if err := admin.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		info, err := admin.ClusterInfo(ctx).Result()
		if err == nil && strings.Contains(info, "cluster_state:ok") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster never became ok: %v %s", err, info)
		}
	}

	t.Run("cross-slot access is refused", func(t *testing.T) {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.Addr()}})
		defer c.Close()
		err := c.Eval(ctx, "#!lua\nredis.call('SET', KEYS[1], 1)\nredis.call('SET', 'elsewhere', 1)\nreturn 1", []string{"here"}).Err()
		if err == nil || !strings.Contains(err.Error(), "same slot") {
			t.Fatalf("got %v, want a cross-slot error: without it this test proves nothing", err)
		}
	})

	runConformance(t, func(t *testing.T) func(Clock) Store {
		prefix := "c" + strconv.FormatInt(namespaces.Add(1), 10)
		return func(clock Clock) Store {
			c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.Addr()}})
			t.Cleanup(func() { _ = c.Close() })
			return NewRedis(c, Options{Clock: clock, Prefix: prefix})
		}
	})
}
