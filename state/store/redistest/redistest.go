// Package redistest runs throwaway redis-server processes for the store's
// tests and the quota filter's benchmarks: each on a free port of its own,
// without persistence unless asked to save on shutdown. A missing
// redis-server is an error, never a reason to skip.
package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is one redis-server process.
type Server struct {
	// Extra are more server arguments, set before Start.
	Extra []string

	bin, dir string
	port     int
	cmd      *exec.Cmd
}

// New picks a free port and a scratch directory; Start runs the server.
func New() (*Server, error) {
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
	return &Server{bin: bin, dir: dir, port: port}, nil
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// Dir is the server's scratch directory, removed by Close.
func (s *Server) Dir() string { return s.dir }

// Start runs the server and waits until it answers PING; a dump.rdb left by
// StopSaving is loaded.
func (s *Server) Start() error {
	logf, err := os.Create(filepath.Join(s.dir, "redis.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	args := append([]string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir, "--dbfilename", "dump.rdb"}, s.Extra...)
	s.cmd = exec.Command(s.bin, args...)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		return err
	}
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer c.Close()
	for range 200 {
		if c.Ping(context.Background()).Err() == nil {
			return nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	s.Kill()
	log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	return fmt.Errorf("redis-server on %s did not answer PING; log:\n%s", s.Addr(), log)
}

// StopSaving shuts the server down after writing its data, as a server that
// goes away and comes back with its data would.
func (s *Server) StopSaving() error {
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer c.Close()
	_ = c.ShutdownSave(context.Background()).Err() // the connection drops: an error is expected
	return s.cmd.Wait()
}

// Kill stops the server at once.
func (s *Server) Kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
}

// Close kills the server and removes its directory.
func (s *Server) Close() {
	s.Kill()
	_ = os.RemoveAll(s.dir)
}

// Trips is a go-redis hook that counts round trips: each command sent on
// its own, and each pipeline as one.
type Trips struct{ n atomic.Int64 }

// Count returns the round trips counted since the last Reset.
func (c *Trips) Count() int64 { return c.n.Load() }

// Reset starts counting again from 0.
func (c *Trips) Reset() { c.n.Store(0) }

// DialHook implements redis.Hook; dials are not counted.
func (c *Trips) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (c *Trips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook implements redis.Hook.
func (c *Trips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

var _ redis.Hook = (*Trips)(nil)
