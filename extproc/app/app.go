// Package app wires the ext_proc process: flags, policy loading and
// watching, filter chains, the gRPC server Envoy calls, and the metrics
// endpoint.
package app

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/service/accesslog/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/switchyard/switchyard/audit"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/configs/reload"
	"github.com/switchyard/switchyard/envoy/channel"
	"github.com/switchyard/switchyard/extproc/server"
	"github.com/switchyard/switchyard/extproc/tracing"
	"github.com/switchyard/switchyard/filters"
	_ "github.com/switchyard/switchyard/filters/all" // every filter a policy may name
	"github.com/switchyard/switchyard/filters/router"
	"github.com/switchyard/switchyard/state/cache"
	"github.com/switchyard/switchyard/state/calibration"
	"github.com/switchyard/switchyard/state/events"
	"github.com/switchyard/switchyard/state/health"
	"github.com/switchyard/switchyard/state/lease"
	"github.com/switchyard/switchyard/state/ledger"
	"github.com/switchyard/switchyard/state/store"
)

// DefaultListen is the Unix socket Envoy's bootstrap (envoy/bootstrap.yaml)
// reaches ext_proc at: only the user both run as can open it.
const DefaultListen = "unix:/var/run/switchyard/extproc.sock"

// calibrationPeriod is how often auto routes' score distributions are
// shared between replicas and their thresholds re-read.
const calibrationPeriod = 5 * time.Second

// maxMessageBytes bounds one ext_proc message: a buffered body plus
// headers. Bodies are limited by policy to 64MiB at most.
const maxMessageBytes = 80 << 20

// Envoy's ext_proc messages are small and come one at a time per stream,
// so its connection never grows grpc-go's flow-control window, whose
// estimation (BDP) then sent a ping after nearly every message, and
// Envoy's acknowledgement woke ext_proc once more: at concurrency 1 a
// tenth of ext_proc's CPU (docs/BENCHMARKS.md). Static windows turn the
// estimation off; these are as large as it would ever grow them, and the
// bodies in flight are bounded by admission anyway (-max-inflight-bytes).
const (
	streamWindow = 4 << 20
	connWindow   = 16 << 20
)

// serverOptions are the ext_proc gRPC server's, besides its credentials.
func serverOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ForceServerCodecV2(newVTCodec()),
		grpc.MaxRecvMsgSize(maxMessageBytes),
		grpc.MaxSendMsgSize(maxMessageBytes),
		grpc.MaxConcurrentStreams(100000),
		grpc.InitialWindowSize(streamWindow),
		grpc.InitialConnWindowSize(connWindow),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
	}
}

type config struct {
	configDir string
	channel   channel.Server
	metrics   string
	pprof     bool
	logLevel  string
	poll      time.Duration
	redis     redisConfig
	auditLog  string
	admission server.Admission
	spoolDir  string
	spoolMax  int64
	memory    memory
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("extproc", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.configDir, "config", "configs/local", "policy directory")
	c.channel.Register(fs, DefaultListen, "Envoy")
	fs.StringVar(&c.metrics, "metrics", "127.0.0.1:18002", "address of /metrics, /healthz (liveness) and /readyz (readiness: Redis); empty: off")
	fs.BoolVar(&c.pprof, "pprof", false, "also serve Go profiles (/debug/pprof/) on the metrics address")
	fs.StringVar(&c.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.DurationVar(&c.poll, "poll", 2*time.Second, "how often the policy directory is re-read besides file events")
	fs.StringVar(&c.redis.addrs, "redis", "", "Redis shared by replicas: host:port, or several (a Redis Cluster's nodes, or Sentinels with -redis-master), comma-separated; empty: embedded in-memory store for a single node")
	fs.StringVar(&c.redis.master, "redis-master", "", "Sentinel: name of the primary the -redis sentinels watch")
	fs.BoolVar(&c.redis.cluster, "redis-cluster", false, "the one -redis address is a Redis Cluster's (configuration endpoint)")
	fs.BoolVar(&c.redis.tls, "redis-tls", false, "connect to Redis over TLS (credentials: $"+usernameEnv+", $"+passwordEnv+")")
	fs.StringVar(&c.auditLog, "audit-log", "", "file the audit trail is appended to; empty: stderr, as lines with \"kind\":\"audit\"")
	fs.StringVar(&c.spoolDir, "spool-dir", ".run/spool", "directory of the disk spools that keep unwritten usage records and budget commits across a crash, one per replica; empty: memory only")
	fs.Int64Var(&c.spoolMax, "spool-max-bytes", 256<<20, "bound of each spool on disk; past it records are kept in memory only, counted in switchyard_spool_overflow_total")
	fs.Int64Var(&c.admission.MaxInFlight, "max-inflight", 1024, "most requests in flight; more are refused with 503 and retry-after (0: no bound)")
	fs.Int64Var(&c.admission.MaxInFlightBytes, "max-inflight-bytes", 64<<20, "most request-body bytes in flight; more are refused with 503 and retry-after (0: no bound)")
	fs.IntVar(&c.memory.gcPercent, "gc-percent", defaultGCPercent, "the collector's GOGC (0: Go's default); $GOGC, when set, wins")
	fs.Int64Var(&c.memory.headroom, "gc-headroom", defaultHeadroom, "the heap's room in bytes past its live part: after each collection GOGC is set to give it that, between 100 and -gc-percent, so that what open streams hold is not multiplied (0: GOGC stays -gc-percent)")
	fs.Int64Var(&c.memory.limit, "memory-limit", defaultMemoryLimit, "soft bound of the Go heap in bytes, past which the collector runs more often (0: none); $GOMEMLIMIT, when set, wins")
	fs.DurationVar(&c.memory.idleRelease, "release-when-idle", defaultIdleRelease, "give the heap's free memory back to the system once no request has come for this long (0: leave it to Go's scavenger)")
	return c, fs.Parse(args)
}

// Run serves ext_proc until ctx ends.
func Run(ctx context.Context, args []string, _, stderr io.Writer) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	c.memory.tune()
	log := slog.New(server.LogHandler(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level(c.logLevel)}))).With(slog.String("process", "extproc"))
	trail, trailFile, err := audit.Open(c.auditLog, stderr, "extproc")
	if err != nil {
		return err
	}
	defer trailFile.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	loads := reload.New(reg, "extproc", c.configDir, log, trail)

	storeMetrics := store.NewMetrics(reg)
	var (
		st store.Store
		rc redis.UniversalClient
	)
	ro, err := c.redis.options()
	if err != nil {
		return err
	}
	if ro != nil {
		rc = redis.NewUniversalClient(ro)
		defer rc.Close()
		trips := newRoundTrips()
		reg.MustRegister(trips.total)
		rc.AddHook(trips)
		st = store.NewRedis(rc, store.Options{Metrics: storeMetrics, Prefix: storePrefix})
		log.Info("store: redis", slog.String("client", kind(ro)), slog.Any("addrs", ro.Addrs))
	} else {
		st = store.NewMemory(store.Options{Metrics: storeMetrics})
		log.Info("store: embedded in-memory (single node)")
	}
	spools, closeSpools, err := openSpools(c.spoolDir, c.spoolMax, reg, log)
	if err != nil {
		log.Error("opening the spools", slog.String("error", err.Error()))
		return err
	}
	defer closeSpools()
	spool := runQuota(ctx, st, storeMetrics, spools[budgetSpool], log)
	if rc != nil {
		// Replicas share limits through Redis; leases keep it off the
		// request path (state/lease, docs/BUDGETS.md).
		leases := lease.New(st, lease.Options{Spool: spool, Metrics: lease.NewMetrics(reg), Log: log})
		go leases.Run(ctx)
		defer leases.Close()
		st = leases
	}
	traces := tracing.NewPipelines(reg, log)
	defer func() {
		// What was kept before shutdown reaches the collector, if it can.
		flushCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := traces.Close(flushCtx); err != nil {
			log.Warn("flushing the traces", slog.String("error", err.Error()))
		}
	}()
	sticky := router.NewSticky(100_000, time.Now)
	cal := calibration.New(replicaName(), st, reg, log)
	var (
		mon      *health.Monitor
		usage    *ledger.Writer
		bus      *events.Publisher
		alerts   *events.Alerter
		answers  *cache.Shared // the response cache's Redis layer; nil without Redis
		ledgerDB ledger.Ledger
	)
	build := func(p *policy.Policy) (*server.Runtime, error) {
		if mon == nil {
			m, err := health.New(p.Gateway.Health, time.Now, log)
			if err != nil {
				return nil, err
			}
			mon = m
			reg.MustRegister(mon.Collector())
		} else if err := mon.Reconfigure(p.Gateway.Health); err != nil {
			return nil, err
		}
		models := map[string][]string{}
		for _, m := range p.Models {
			for _, d := range m.Deployments {
				models[d.Provider.Name] = append(models[d.Provider.Name], d.Name)
			}
		}
		mon.Track(models)
		chains, err := filters.Build(filters.Deps{
			Policy: p, Logger: log, Metrics: reg, Secrets: secrets{}, Store: st, Spool: spool, Sticky: sticky, Health: mon,
			Ledger: usage, Events: bus, Alerts: alerts, Answers: answers, Usage: ledgerDB, Audit: trail, Calibration: cal,
			Loads: loads,
		})
		if err != nil {
			return nil, err
		}
		var auto []string
		for _, r := range p.Routes {
			if r.Routing.Auto != nil {
				auto = append(auto, r.Name)
			}
		}
		cal.Retain(auto)
		tr, err := traces.Tracer(p.Gateway.Tracing)
		if err != nil {
			return nil, err
		}
		return &server.Runtime{Policy: p, Chains: chains, Tracing: tr}, nil
	}
	p, err := policy.Load(c.configDir)
	if err != nil {
		loads.Refused(ctx, err)
		return err
	}
	db, writer, err := openLedger(ctx, p, reg, spools[ledgerSpool], spools[heldSpool], log)
	if err != nil {
		log.Error("opening the usage ledger", slog.String("error", err.Error()))
		return err
	}
	defer func() {
		// Every record queued before shutdown reaches the database.
		flushCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := writer.Close(flushCtx); err != nil {
			log.Error("flushing the usage ledger", slog.String("error", err.Error()))
		}
		_ = db.Close()
	}()
	usage = writer
	ledgerDB = db
	var scripting redis.Scripter // stays nil without Redis
	if rc != nil {
		scripting = rc
		answers = cache.NewShared(rc, storePrefix)
	}
	if bus, alerts, err = openEvents(p, scripting, log); err != nil {
		log.Error("opening the events", slog.String("error", err.Error()))
		return err
	} else if bus != nil {
		defer func() {
			flushCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			if err := bus.Close(flushCtx); err != nil {
				log.Error("flushing the usage events", slog.String("error", err.Error()))
			}
			alerts.Close(flushCtx)
		}()
	}
	rt, err := build(p)
	if err != nil {
		loads.Refused(ctx, err)
		return err
	}
	var current atomic.Pointer[server.Runtime]
	current.Store(rt)
	loads.Applied(ctx, p.Version)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv := server.New(current.Load, log)
	srv.SetAdmission(c.admission)
	reg.MustRegister(srv.Collector())
	lis, creds, err := c.channel.Open()
	if err != nil {
		return err
	}
	g := grpc.NewServer(append(creds, serverOptions()...)...)
	extprocv3.RegisterExternalProcessorServer(g, srv)
	accesslogv3.RegisterAccessLogServiceServer(g, srv.AttemptLog())
	errc := make(chan error, 3)
	go func() { errc <- g.Serve(lis) }()
	go c.memory.releaseWhenIdle(ctx, srv.Activity, debug.FreeOSMemory)
	_ = c.memory.followLiveHeap(ctx, debug.SetGCPercent)
	go syncDrills(ctx, st, mon, time.Second, log)
	go cal.Run(ctx, calibrationPeriod)
	live := func() *policy.Policy { return current.Load().Policy }
	share := newOutageShare(st, mon, replicaName(), func() time.Duration { return live().Gateway.Health.Breaker.OpenTimeout }, log)
	go share.run(ctx, time.Second)
	chk := newChecker(mon, live, secrets{}, log)
	mon.OnDegraded(chk.warmBackups)
	go chk.run(ctx, time.Second)
	go newWindowShare(st, mon, replicaName(), log).run(ctx, time.Second)
	log.Info("ext_proc listening", slog.String("addr", c.channel.Listen))

	var hs *http.Server
	if c.metrics != "" {
		// The ledger is not among the checks: while it is down the writer
		// keeps the records (and its spool), so it costs no request, and a
		// replica taken out of service for it would turn a ledger outage
		// into a gateway outage. Its state shows in
		// switchyard_ledger_write_errors_total and the buffered gauge.
		var checks []check
		if rc != nil {
			checks = append(checks, check{name: "redis", ping: func(ctx context.Context) error { return rc.Ping(ctx).Err() }})
		}
		mux := opsMux(reg, func() string { return current.Load().Policy.Version }, checks, func() []string { return unreachableLines(mon) }, c.pprof)
		hs = &http.Server{Addr: c.metrics, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := hs.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
	}
	go func() {
		errc <- policy.Watch(ctx, c.configDir, p.Version, c.poll, func(np *policy.Policy) error {
			nrt, err := build(np)
			if err != nil {
				return err
			}
			current.Store(nrt)
			loads.Applied(ctx, np.Version)
			return nil
		}, func(err error) { loads.Refused(ctx, err) })
	}()

	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	// Let in-flight streams finish (Envoy drains first), but not forever.
	stopped := make(chan struct{})
	go func() { g.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		g.Stop()
	}
	if hs != nil {
		_ = hs.Close()
	}
	return err
}

func level(s string) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return slog.LevelInfo
	}
	return l
}
