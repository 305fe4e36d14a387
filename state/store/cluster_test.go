package store

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard/switchyard/state/store/redistest"
)

// TestRedisClusterConformance runs the suite on a three-node Redis Cluster
// (the slots split between the nodes) through go-redis's universal client,
// as ext_proc makes it from several -redis addresses. Redis 7 checks every
// key a "#!lua" script touches against the slot of its declared keys, so
// this proves the hash-tag layout: a script reaching outside its slot
// fails with a cross-slot error, and one whose keys live on another node
// is redirected there.
func TestRedisClusterConformance(t *testing.T) {
	addrs := startCluster(t, 3)
	ctx := context.Background()
	t.Run("cross-slot access is refused", func(t *testing.T) {
		c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: addrs})
		defer c.Close()
		err := c.Eval(ctx, "#!lua\nredis.call('SET', KEYS[1], 1)\nredis.call('SET', 'elsewhere', 1)\nreturn 1", []string{"here"}).Err()
		if err == nil || !(strings.Contains(err.Error(), "same slot") || strings.Contains(err.Error(), "non local key")) {
			t.Fatalf("got %v, want a cross-slot error: without it this test proves nothing", err)
		}
	})

	runConformance(t, func(t *testing.T) func(Clock) Store {
		prefix := "c" + strconv.FormatInt(namespaces.Add(1), 10)
		return func(clock Clock) Store {
			c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: addrs})
			if _, ok := c.(*redis.ClusterClient); !ok {
				t.Fatalf("go-redis made a %T for three addresses, want a cluster client", c)
			}
			t.Cleanup(func() { _ = c.Close() })
			return NewRedis(c, Options{Clock: clock, Prefix: prefix})
		}
	})
}

// startCluster runs n redis-server nodes as one cluster, the 16384 slots
// split evenly, and waits until every node says the cluster is ok.
func startCluster(t *testing.T, n int) []string {
	t.Helper()
	ctx := context.Background()
	var addrs []string
	var admins []*redis.Client
	for i := range n {
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
		t.Cleanup(func() { _ = admin.Close() })
		from, to := i*16384/n, (i+1)*16384/n-1
		if err := admin.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", from, to).Err(); err != nil {
			t.Fatal(err)
		}
		addrs, admins = append(addrs, srv.Addr()), append(admins, admin)
	}
	for _, a := range addrs[1:] {
		host, port, _ := net.SplitHostPort(a)
		if err := admins[0].ClusterMeet(ctx, host, port).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, admin := range admins {
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			info, err := admin.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(n)) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("cluster never became ok: %v %s", err, info)
			}
		}
	}
	return addrs
}
