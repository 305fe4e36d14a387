package quota

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/switchyard/switchyard/bench/cputime"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/filters/auth"
	"github.com/switchyard/switchyard/filters/router"
	"github.com/switchyard/switchyard/state/lease"
	"github.com/switchyard/switchyard/state/store"
	"github.com/switchyard/switchyard/state/store/redistest"
)

// benchPolicy is the request the gateway's performance targets are about: a
// tenant with a daily and a monthly budget, an app, and a key with its own
// token bucket and requests- and tokens-per-minute limits, all far from
// being reached. Model "limited" is served by a provider with limits of its
// own, as configs/local's are; model "plain" by one without.
var benchPolicy = fmt.Sprintf(`
providers:
  - {name: plain, kind: openai, base_url: "http://127.0.0.1:1"}
  - {name: limited, kind: openai, base_url: "http://127.0.0.1:2", limits: {requests_per_minute: 1000000000, tokens_per_minute: 1000000000000}}
models:
  - {name: plain, provider: plain, context_window: 100000, max_output_tokens: 1000, price_usd_per_mtok: {input: 1, output: 2}}
  - {name: limited, provider: limited, context_window: 100000, max_output_tokens: 1000, price_usd_per_mtok: {input: 1, output: 2}}
routes:
  - {name: chat, path: /v1/chat/completions, api: chat_completions, filters: [auth, router, quota]}
tenants:
  - name: bench
    budget_usd: {daily: 1000000, monthly: 10000000}
    apps: [{name: web}]
    keys:
      - name: bench-key
        app: web
        sha256: %s
        rate_limit: {replenish_rate: 1000000, burst_capacity: 1000000, requests_per_minute: 1000000000, tokens_per_minute: 1000000000000}
`, sha("sk-bench"))

// BenchmarkAdmitSettle runs the quota filter's part of one request, as
// ext_proc does: the governor (request headers), admission (request body)
// and settlement (Done) of an answer that wrote 20 of the 50 tokens it
// was allowed, so the tokens-per-minute windows need correcting. On Redis it
// reports the round trips each request makes (every command and every
// pipeline sent, counted by a client hook), the CPU this process spent
// (cpu-ns/op, the client's share) and the CPU redis-server spent
// (redis-cpu-ns/op, from INFO). ns/op on Redis is wall time, round trips
// to a local server included.
//
//	go test -run '^$' -bench BenchmarkAdmitSettle -benchtime 5000x ./filters/quota/
func BenchmarkAdmitSettle(b *testing.B) {
	srv, err := redistest.New()
	if err == nil {
		err = srv.Start()
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	var runs atomic.Int64
	stores := []struct {
		name string
		open func(b *testing.B) (store.Store, *redistest.Trips)
	}{
		{"memory", func(*testing.B) (store.Store, *redistest.Trips) { return store.NewMemory(store.Options{}), nil }},
		{"redis", func(b *testing.B) (store.Store, *redistest.Trips) {
			c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
			b.Cleanup(func() { _ = c.Close() })
			trips := &redistest.Trips{}
			c.AddHook(trips)
			prefix := "b" + strconv.FormatInt(runs.Add(1), 10)
			return store.NewRedis(c, store.Options{Prefix: prefix}), trips
		}},
		// As ext_proc runs with Redis: leases in front of it (state/lease);
		// their background round trips are counted too.
		{"redis+lease", func(b *testing.B) (store.Store, *redistest.Trips) {
			c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
			trips := &redistest.Trips{}
			c.AddHook(trips)
			prefix := "b" + strconv.FormatInt(runs.Add(1), 10)
			l := lease.New(store.NewRedis(c, store.Options{Prefix: prefix}), lease.Options{})
			ctx, cancel := context.WithCancel(context.Background())
			go l.Run(ctx)
			b.Cleanup(func() { cancel(); l.Close(); _ = c.Close() })
			return l, trips
		}},
	}
	for _, s := range stores {
		for _, model := range []string{"plain", "limited"} {
			b.Run(s.name+"/provider="+model, func(b *testing.B) {
				st, trips := s.open(b)
				benchCycle(b, st, trips, srv.Addr(), model)
			})
		}
	}
}

func benchCycle(b *testing.B, st store.Store, trips *redistest.Trips, redisAddr, model string) {
	p, err := policy.Compile([]policy.File{{Name: "policy.yaml", Data: []byte(benchPolicy)}})
	if err != nil {
		b.Fatal(err)
	}
	route := p.Route("/v1/chat/completions")
	deps := filters.Deps{Policy: p, Route: route, Store: st, Spool: store.NewSpooler(st, 100, nil), Metrics: prometheus.NewRegistry()}
	a, err := auth.New(policy.FilterRef{Name: "auth"}, deps)
	if err != nil {
		b.Fatal(err)
	}
	rt, err := router.New(policy.FilterRef{Name: "router"}, deps)
	if err != nil {
		b.Fatal(err)
	}
	q := newFilter(DefaultConfig(), deps, time.Now)
	ctx := context.Background()

	// Auth and the router run once: the loop measures quota alone.
	tmpl := &filters.Exchange{
		ID: "template", Policy: p, Route: route, Method: "POST", Path: route.Path,
		Header: filters.Headers{{Key: "authorization", Value: "Bearer sk-bench"}},
		Body:   []byte(chat(model, 50)),
	}
	chain := filters.NewChain([]filters.Filter{a, rt})
	if err := chain.RequestHeaders(ctx, tmpl); err != nil {
		b.Fatal(err)
	}
	if err := chain.RequestBody(ctx, tmpl); err != nil {
		b.Fatal(err)
	}
	usage := filters.Usage{Known: true, PromptTokens: 8, CompletionTokens: 20, CostMicros: 48}
	cycle := func(i int) {
		x := &filters.Exchange{
			ID: "bench-" + strconv.Itoa(i), Started: time.Now(), Policy: p, Route: route,
			Chat: tmpl.Chat, Caller: tmpl.Caller, Plan: slices.Clone(tmpl.Plan), RouteReason: tmpl.RouteReason,
		}
		if err := q.RequestHeaders(ctx, x); err != nil {
			b.Fatal(err)
		}
		if err := q.RequestBody(ctx, x); err != nil {
			b.Fatal(err)
		}
		x.NewAttempt(1, time.Now())
		x.Usage = usage
		q.Done(ctx, x, nil)
	}
	cycle(-1) // loads the scripts and fills the governor's view

	var redisCPU func() time.Duration
	var before time.Duration
	if trips != nil {
		redisCPU = redisCPUReader(b, redisAddr)
		before = redisCPU()
		trips.Reset()
	}
	cpu := cputime.Process()
	b.ResetTimer()
	for i := range b.N {
		cycle(i)
	}
	b.StopTimer()
	b.ReportMetric(float64(cputime.Process()-cpu)/float64(b.N), "cpu-ns/op")
	if trips != nil {
		b.ReportMetric(float64(trips.Count())/float64(b.N), "roundtrips/op")
		b.ReportMetric(float64(redisCPU()-before)/float64(b.N), "redis-cpu-ns/op")
	}
	if l, ok := st.(*lease.Store); ok {
		l.Close() // commits the leases, so the check sees every request's spend
	}
	checkBenchSettled(b, st, tmpl.Caller.Tenant.Name)
}

// checkBenchSettled fails a benchmark whose requests did not all settle: a
// faster cycle that leaks reservations would measure nothing worth having.
func checkBenchSettled(b *testing.B, st store.Store, tenant string) {
	for _, period := range []store.Period{store.Daily, store.Monthly} {
		s, err := st.Budget(context.Background(), store.BudgetLine{Scope: store.Scope{Tenant: tenant}, Period: period, Limit: 1 << 50})
		if err != nil {
			b.Fatal(err)
		}
		if s.Reserved != 0 || s.Spent == 0 {
			b.Fatalf("%s budget after the run: spent %d, reserved %d; want spend and 0 reserved", period, s.Spent, s.Reserved)
		}
	}
}

// redisCPUReader returns a function that reads redis-server's CPU time
// (user + system) from INFO, on a client of its own so it is not counted.
func redisCPUReader(b *testing.B, addr string) func() time.Duration {
	c := redis.NewClient(&redis.Options{Addr: addr})
	b.Cleanup(func() { _ = c.Close() })
	return func() time.Duration {
		info, err := c.Info(context.Background(), "cpu").Result()
		if err != nil {
			b.Fatal(err)
		}
		var total float64
		for _, line := range strings.Split(info, "\r\n") {
			k, v, _ := strings.Cut(line, ":")
			if k == "used_cpu_sys" || k == "used_cpu_user" {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					b.Fatal(err)
				}
				total += f
			}
		}
		return time.Duration(total * float64(time.Second))
	}
}
