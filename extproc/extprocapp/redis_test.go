package extprocapp

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
)

// TestRedisHonoursTheDeadline: against a Redis that accepts connections and
// never answers (black-holed), a call gives up at its context's deadline
// instead of the client's own timeouts.
func TestRedisHonoursTheDeadline(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	o, err := redisConfig{addrs: lis.Addr().String()}.options()
	if err != nil {
		t.Fatal(err)
	}
	// Client timeouts that would hold a call for far longer than the test.
	o.ReadTimeout, o.WriteTimeout, o.DialTimeout = time.Hour, time.Hour, time.Hour
	o.MaxRetries = -1
	rc := redis.NewUniversalClient(o)
	defer rc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- rc.Get(ctx, "k").Err() }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) && !isTimeout(err) {
			t.Errorf("call ended with %v, want the context's deadline", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call ignored its context deadline")
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestRedisOptions(t *testing.T) {
	tests := []struct {
		name      string
		c         redisConfig
		wantAddrs []string
		wantKind  string
		wantErr   string
	}{
		{name: "none: the embedded store", c: redisConfig{}},
		{name: "one server", c: redisConfig{addrs: "10.0.0.1:6379"}, wantAddrs: []string{"10.0.0.1:6379"}, wantKind: "single"},
		{name: "cluster nodes", c: redisConfig{addrs: "a:7000, b:7001,c:7002"}, wantAddrs: []string{"a:7000", "b:7001", "c:7002"}, wantKind: "cluster"},
		{name: "a cluster's configuration endpoint", c: redisConfig{addrs: "cfg.example:6379", cluster: true}, wantAddrs: []string{"cfg.example:6379"}, wantKind: "cluster"},
		{name: "sentinels", c: redisConfig{addrs: "s1:26379,s2:26379", master: "switchyard"}, wantAddrs: []string{"s1:26379", "s2:26379"}, wantKind: "sentinel"},
		{name: "a master without addresses", c: redisConfig{master: "switchyard"}, wantErr: "need -redis addresses"},
		{name: "sentinel and cluster", c: redisConfig{addrs: "a:1", master: "m", cluster: true}, wantErr: "exclude each other"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(passwordEnv, "hunter2")
			o, err := tc.c.options()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantAddrs == nil {
				if o != nil {
					t.Fatalf("options = %+v, want none", o)
				}
				return
			}
			if diff := cmp.Diff(tc.wantAddrs, o.Addrs); diff != "" {
				t.Errorf("addrs (-want +got):\n%s", diff)
			}
			if k := kind(o); k != tc.wantKind {
				t.Errorf("client = %s, want %s", k, tc.wantKind)
			}
			c := redis.NewUniversalClient(o) // dials nothing until used
			defer c.Close()
			if _, isCluster := c.(*redis.ClusterClient); isCluster != (tc.wantKind == "cluster") {
				t.Errorf("go-redis made a %T for a %s", c, tc.wantKind)
			}
			if o.Password != "hunter2" {
				t.Errorf("password not taken from $%s", passwordEnv)
			}
		})
	}
}
