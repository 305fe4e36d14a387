package app

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

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
	o := redisOptions(lis.Addr().String())
	// Client timeouts that would hold a call for far longer than the test.
	o.ReadTimeout, o.WriteTimeout, o.DialTimeout = time.Hour, time.Hour, time.Hour
	o.MaxRetries = -1
	rc := redis.NewClient(o)
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
