package extprocapp

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// roundTrips counts the Redis round trips ext_proc makes (a command sent
// alone or a whole pipeline, each one), so the cost of the shared state per
// request can be read off the metrics (make bench does).
type roundTrips struct{ total prometheus.Counter }

func newRoundTrips() *roundTrips {
	return &roundTrips{total: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "switchyard_store_redis_roundtrips_total",
		Help: "Redis round trips made by this ext_proc: each command sent alone and each pipeline count one.",
	})}
}

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.total.Inc()
		return next(ctx, cmd)
	}
}

func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.total.Inc()
		return next(ctx, cmds)
	}
}
