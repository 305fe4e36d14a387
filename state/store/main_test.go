package store

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/switchyard/switchyard/state/store/redistest"
)

// sharedRedis serves every test except the outage test, which needs a server
// of its own to stop.
var sharedRedis *redistest.Server

func TestMain(m *testing.M) {
	srv, err := redistest.New()
	if err == nil {
		err = srv.Start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "store tests need a real redis-server:", err)
		os.Exit(1)
	}
	sharedRedis = srv
	code := m.Run()
	srv.Close()
	os.Exit(code)
}

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock(t time.Time) *fakeClock { return &fakeClock{t: t} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// backend gives a test fresh, empty shared state and returns a constructor
// of replicas over it; the clock each replica gets pins its time.
type backend func(t *testing.T) func(clock Clock) Store

func memoryBackend(t *testing.T) func(Clock) Store {
	clock := &clockSlot{}
	m := NewMemory(Options{Clock: clock})
	return func(c Clock) Store {
		clock.set(c)
		return m // one node: every "replica" is the same store, on the clock handed in last
	}
}

// clockSlot forwards to the clock set last.
type clockSlot struct {
	mu sync.Mutex
	c  Clock
}

func (s *clockSlot) set(c Clock) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.c = c
}

func (s *clockSlot) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c.Now()
}

var namespaces atomic.Int64

// isolated is a key prefix of its own on the shared server, so that a
// test run again in the same process (-count) finds none of its last
// run's keys.
func isolated(name string) string {
	return name + "-" + strconv.FormatInt(namespaces.Add(1), 10)
}

// redisBackend isolates each test under its own key prefix on the shared
// server; every replica is a separate client, as separate processes would be.
func redisBackend(t *testing.T) func(Clock) Store {
	prefix := "t" + strconv.FormatInt(namespaces.Add(1), 10)
	return func(c Clock) Store {
		client := redis.NewClient(&redis.Options{Addr: sharedRedis.Addr()})
		t.Cleanup(func() { _ = client.Close() })
		return NewRedis(client, Options{Clock: c, Prefix: prefix})
	}
}

// metricValue reads one counter or gauge.
func metricValue(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 1)
	c.Collect(ch)
	var m dto.Metric
	if err := (<-ch).Write(&m); err != nil {
		t.Fatal(err)
	}
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}
