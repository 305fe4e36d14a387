package extprocapp

import (
	"crypto/tls"
	"errors"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisConfig is where the shared store lives: one server, a Redis Cluster
// or a Sentinel-managed primary. go-redis picks the client from it (every
// key of the store is hash-tagged, so a script's keys share a slot).
type redisConfig struct {
	addrs   string // comma-separated host:port
	master  string // Sentinel: the primary's name; addrs are the sentinels
	cluster bool   // one address that is a cluster's configuration endpoint
	tls     bool
}

// passwordEnv names the variables holding Redis credentials: never flags,
// which any local user can read in the process list.
const (
	usernameEnv = "SWITCHYARD_REDIS_USERNAME"
	passwordEnv = "SWITCHYARD_REDIS_PASSWORD"
)

// redisBuffer is each way's buffer of a connection to Redis.
const redisBuffer = 8 << 10

// options returns the client options, or nil when no Redis is configured.
func (r redisConfig) options() (*redis.UniversalOptions, error) {
	if strings.TrimSpace(r.addrs) == "" {
		if r.master != "" || r.cluster {
			return nil, errors.New("-redis-master and -redis-cluster need -redis addresses")
		}
		return nil, nil
	}
	if r.master != "" && r.cluster {
		return nil, errors.New("-redis-master (Sentinel) and -redis-cluster exclude each other")
	}
	// Every store call carries the quota's store timeout as its context
	// deadline, and each limit's fail-open or fail-closed answer is only as
	// fast as that deadline is honoured: without ContextTimeoutEnabled
	// go-redis ignores it and waits its own read timeout (3 s), or 5 s for a
	// dial, on a black-holed Redis. The timeouts below only bound calls made
	// without a deadline.
	o := &redis.UniversalOptions{
		MasterName:            r.master,
		IsClusterMode:         r.cluster,
		Username:              os.Getenv(usernameEnv),
		Password:              os.Getenv(passwordEnv),
		ContextTimeoutEnabled: true,
		DialTimeout:           time.Second,
		ReadTimeout:           time.Second,
		WriteTimeout:          time.Second,
		// The gateway's commands and replies are small (counters, leases,
		// scripts' arguments); go-redis's buffers of 32 KiB a connection,
		// 128 KiB each way on a pipeline's, are held for as long as the
		// pool keeps a connection. Larger values (a cached answer) are read
		// in more turns of the buffer, not refused.
		ReadBufferSize:          redisBuffer,
		WriteBufferSize:         redisBuffer,
		PipelineReadBufferSize:  redisBuffer,
		PipelineWriteBufferSize: redisBuffer,
	}
	for _, a := range strings.Split(r.addrs, ",") {
		if a = strings.TrimSpace(a); a != "" {
			o.Addrs = append(o.Addrs, a)
		}
	}
	if r.tls {
		o.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	return o, nil
}

// kind names the client go-redis makes from o, for the start-up log.
func kind(o *redis.UniversalOptions) string {
	switch {
	case o.MasterName != "":
		return "sentinel"
	case len(o.Addrs) > 1 || o.IsClusterMode:
		return "cluster"
	}
	return "single"
}
