package app

import (
	"time"

	"github.com/redis/go-redis/v9"
)

// redisOptions are the client settings for the shared store. Every store
// call carries the quota's store timeout as its context deadline, and each
// limit's fail-open or fail-closed answer is only as fast as that deadline
// is honoured: without ContextTimeoutEnabled go-redis ignores it and waits
// its own read timeout (3 s), or 5 s for a dial, on a black-holed Redis.
// The timeouts below only bound calls made without a deadline.
func redisOptions(addr string) *redis.Options {
	return &redis.Options{
		Addr:                  addr,
		ContextTimeoutEnabled: true,
		DialTimeout:           time.Second,
		ReadTimeout:           time.Second,
		WriteTimeout:          time.Second,
	}
}
