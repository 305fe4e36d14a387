package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
)

// sharedRedis serves every test except the outage test, which needs a server
// of its own to stop.
var sharedRedis *redisServer

func TestMain(m *testing.M) {
	srv, err := newRedisServer()
	if err == nil {
		err = srv.start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "store tests need a real redis-server:", err)
		os.Exit(1)
	}
	sharedRedis = srv
	code := m.Run()
	srv.kill()
	_ = os.RemoveAll(srv.dir)
	os.Exit(code)
}

// redisServer is one redis-server process on a free port, without
// persistence unless asked to save on shutdown.
type redisServer struct {
	bin, dir string
	port     int
	extra    []string // more server arguments
	cmd      *exec.Cmd
}

func newRedisServer() (*redisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if _, statErr := os.Stat("/usr/bin/redis-server"); statErr != nil {
			return nil, errors.New("redis-server not found: run apt-get install redis-server")
		}
		bin = "/usr/bin/redis-server"
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "store-redis-")
	if err != nil {
		return nil, err
	}
	return &redisServer{bin: bin, dir: dir, port: port}, nil
}

func (s *redisServer) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// start runs the server and waits until it answers PING; a dump.rdb left by
// stopSaving is loaded.
func (s *redisServer) start() error {
	logf, err := os.Create(filepath.Join(s.dir, "redis.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	args := append([]string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir, "--dbfilename", "dump.rdb"}, s.extra...)
	s.cmd = exec.Command(s.bin, args...)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		return err
	}
	c := redis.NewClient(&redis.Options{Addr: s.addr(), MaxRetries: -1})
	defer c.Close()
	for range 200 {
		if c.Ping(context.Background()).Err() == nil {
			return nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	s.kill()
	log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	return fmt.Errorf("redis-server on %s did not answer PING; log:\n%s", s.addr(), log)
}

// stopSaving shuts the server down after writing its data, as a server that
// goes away and comes back with its data would.
func (s *redisServer) stopSaving() error {
	c := redis.NewClient(&redis.Options{Addr: s.addr(), MaxRetries: -1})
	defer c.Close()
	_ = c.ShutdownSave(context.Background()).Err() // the connection drops: an error is expected
	return s.cmd.Wait()
}

func (s *redisServer) kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
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

// redisBackend isolates each test under its own key prefix on the shared
// server; every replica is a separate client, as separate processes would be.
func redisBackend(t *testing.T) func(Clock) Store {
	prefix := "t" + strconv.FormatInt(namespaces.Add(1), 10)
	return func(c Clock) Store {
		client := redis.NewClient(&redis.Options{Addr: sharedRedis.addr()})
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
