// Package extprocapp wires the ext_proc process: flags, policy loading and
// watching, filter chains, the gRPC server Envoy calls, and the metrics
// endpoint.
package extprocapp

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
	"github.com/switchyard/switchyard/filters/translate"
	"github.com/switchyard/switchyard/state/answercache"
	"github.com/switchyard/switchyard/state/calibration"
	"github.com/switchyard/switchyard/state/events"
	"github.com/switchyard/switchyard/state/health"
	"github.com/switchyard/switchyard/state/lease"
	"github.com/switchyard/switchyard/state/ledger"
	"github.com/switchyard/switchyard/state/priors"
	"github.com/switchyard/switchyard/state/probe"
	"github.com/switchyard/switchyard/state/sticky"
	"github.com/switchyard/switchyard/state/store"
	"github.com/switchyard/switchyard/translator"
)

// DefaultListen is the Unix socket Envoy's bootstrap (envoy/bootstrap.yaml)
// reaches ext_proc at: only the user both run as can open it.
const DefaultListen = "unix:/var/run/switchyard/extproc.sock"

// calibrationPeriod is how often auto routes' score distributions (and
// learning routes' domain evidence) are shared between replicas and their
// thresholds (and shifts) re-read.
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

// streamWorkers is how many goroutines serve ext_proc streams one after
// another. A stream served on a goroutine of its own grows its stack in
// grpc's receive, copying it (runtime.copystack: 3 % of ext_proc's CPU at
// concurrency 64 once the chain's phases run on goroutines of their own,
// 6.5 % before); a worker keeps its stack for the next stream, and only
// receives and sends on it. Streams beyond the workers still get
// goroutines of their own.
const streamWorkers = 128

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
		grpc.NumStreamWorkers(streamWorkers),
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
	fs.Int64Var(&c.memory.headroom, "gc-headroom", defaultHeadroom, "the heap's room in bytes past its live part: after each collection GOGC is set to give it that, between 100 and -gc-percent, so that what open streams hold is not multiplied; past 128 requests in flight they share it (0: GOGC stays -gc-percent)")
	fs.Int64Var(&c.memory.limit, "memory-limit", defaultMemoryLimit, "soft bound of the Go heap in bytes, past which the collector runs more often (0: none); $GOMEMLIMIT, when set, wins")
	fs.DurationVar(&c.memory.idleRelease, "release-when-idle", defaultIdleRelease, "give the heap's free memory back to the system once no request has come for this long (0: leave it to Go's scavenger)")
	return c, fs.Parse(args)
}

// Run runs the ext_proc process until ctx ends or a server fails: a list
// of named steps that each set up one part of the process, then the
// wait.
func Run(ctx context.Context, args []string, _, stderr io.Writer) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := &node{c: c, stderr: stderr, errc: make(chan error, 3)}
	defer n.close()
	for _, step := range []struct {
		name string
		run  func(context.Context) error
	}{
		{"logs, audit and metrics", n.observe},
		{"shared store", n.openStore},
		{"spools and budget settlement", n.openSpools},
		{"services that outlive reloads", n.openServices},
		{"policy", n.loadPolicy},
		{"usage ledger", n.openLedger},
		{"usage events", n.openEvents},
		{"first runtime", n.firstRuntime},
		{"gRPC server", n.serve},
		{"background work", n.background},
		{"ops endpoint", n.serveOps},
		{"policy watch", n.watch},
	} {
		if err := step.run(ctx); err != nil {
			if n.log != nil {
				n.log.Error("ext_proc did not start", slog.String("step", step.name), slog.String("error", err.Error()))
			}
			return err
		}
	}
	err = n.wait(ctx)
	cancel() // the background work stops before what it uses closes
	return err
}

// node is the ext_proc process as its steps build it.
type node struct {
	c      *config
	stderr io.Writer
	// closers run in reverse order when Run returns.
	closers []func()
	errc    chan error

	log     *slog.Logger
	trail   *audit.Logger
	reg     *prometheus.Registry
	loads   *reload.Reporter
	st      store.Store
	rc      redis.UniversalClient // nil without Redis
	storeM  *store.Metrics
	spools  map[string]disk
	spool   *store.Spooler
	traces  *tracing.Pipelines
	users   *sticky.Store
	cal     *calibration.Calibrator
	learner *priors.Learner
	probes  *probe.Board

	mon      *health.Monitor
	usage    *ledger.Writer
	bus      *events.Publisher
	alerts   *events.Alerter
	answers  *answercache.Shared // the response cache's Redis layer; nil without Redis
	ledgerDB ledger.Ledger

	p       *policy.Policy // the policy loaded at start
	current atomic.Pointer[server.Runtime]
	srv     *server.Server
	g       *grpc.Server
	hs      *http.Server
}

func (n *node) onClose(f func()) { n.closers = append(n.closers, f) }

func (n *node) close() {
	for i := len(n.closers) - 1; i >= 0; i-- {
		n.closers[i]()
	}
}

// observe opens the process's log, audit trail and metrics registry.
func (n *node) observe(context.Context) error {
	n.c.memory.tune()
	n.log = slog.New(server.LogHandler(slog.NewJSONHandler(n.stderr, &slog.HandlerOptions{Level: level(n.c.logLevel)}))).With(slog.String("process", "extproc"))
	trail, trailFile, err := audit.Open(n.c.auditLog, n.stderr, "extproc")
	if err != nil {
		return err
	}
	n.onClose(func() { trailFile.Close() })
	n.trail = trail
	n.reg = prometheus.NewRegistry()
	n.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	n.loads = reload.New(n.reg, "extproc", n.c.configDir, n.log, trail)
	return nil
}

// openStore connects the state replicas share: Redis, or the embedded
// store of a single node.
func (n *node) openStore(context.Context) error {
	n.storeM = store.NewMetrics(n.reg)
	ro, err := n.c.redis.options()
	if err != nil {
		return err
	}
	if ro == nil {
		n.st = store.NewMemory(store.Options{Metrics: n.storeM})
		n.log.Info("store: embedded in-memory (single node)")
		return nil
	}
	n.rc = redis.NewUniversalClient(ro)
	n.onClose(func() { n.rc.Close() })
	trips := newRoundTrips()
	n.reg.MustRegister(trips.total)
	n.rc.AddHook(trips)
	n.st = store.NewRedis(n.rc, store.Options{Metrics: n.storeM, Prefix: storePrefix})
	n.log.Info("store: redis", slog.String("client", kind(ro)), slog.Any("addrs", ro.Addrs))
	return nil
}

// openSpools opens what ext_proc keeps on disk across a crash, and starts
// settling budgets; with Redis, requests take leases of the limits.
func (n *node) openSpools(ctx context.Context) error {
	spools, closeSpools, err := openSpools(n.c.spoolDir, n.c.spoolMax, n.reg, n.log)
	if err != nil {
		n.log.Error("opening the spools", slog.String("error", err.Error()))
		return err
	}
	n.onClose(closeSpools)
	n.spools = spools
	n.spool = runQuota(ctx, n.st, n.storeM, spools[budgetSpool], n.log)
	if n.rc != nil {
		// Replicas share limits through Redis; leases keep it off the
		// request path (state/lease, docs/BUDGETS.md).
		leases := lease.New(n.st, lease.Options{Spool: n.spool, Metrics: lease.NewMetrics(n.reg), Log: n.log})
		go leases.Run(ctx)
		n.onClose(leases.Close)
		n.st = leases
	}
	return nil
}

// openServices makes what outlives policy reloads: trace pipelines,
// stickiness, the calibrator, the domain learner and the board of
// capability probes.
func (n *node) openServices(context.Context) error {
	n.traces = tracing.NewPipelines(n.reg, n.log)
	n.onClose(func() {
		// What was kept before shutdown reaches the collector, if it can.
		flushCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := n.traces.Close(flushCtx); err != nil {
			n.log.Warn("flushing the traces", slog.String("error", err.Error()))
		}
	})
	n.users = sticky.New(100_000, time.Now)
	n.cal = calibration.New(replicaName(), n.st, n.reg, n.log)
	// Domain priors are shared through the store and outlive restarts;
	// the request path reads this replica's copy.
	n.learner = priors.New(n.st, n.reg, n.log)
	n.probes = probe.NewBoard()
	n.reg.MustRegister(n.probes.Collector())
	return nil
}

func (n *node) loadPolicy(ctx context.Context) error {
	p, err := policy.Load(n.c.configDir)
	if err != nil {
		n.loads.Refused(ctx, err)
		return err
	}
	n.p = p
	return nil
}

func (n *node) openLedger(ctx context.Context) error {
	db, writer, err := openLedger(ctx, n.p, n.reg, n.spools[ledgerSpool], n.spools[heldSpool], n.log)
	if err != nil {
		n.log.Error("opening the usage ledger", slog.String("error", err.Error()))
		return err
	}
	n.onClose(func() {
		// Every record queued before shutdown reaches the database.
		flushCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := writer.Close(flushCtx); err != nil {
			n.log.Error("flushing the usage ledger", slog.String("error", err.Error()))
		}
		_ = db.Close()
	})
	n.usage, n.ledgerDB = writer, db
	return nil
}

func (n *node) openEvents(context.Context) error {
	var scripting redis.Scripter // stays nil without Redis
	if n.rc != nil {
		scripting = n.rc
		n.answers = answercache.NewShared(n.rc, storePrefix)
	}
	bus, alerts, err := openEvents(n.p, scripting, n.log)
	if err != nil {
		n.log.Error("opening the events", slog.String("error", err.Error()))
		return err
	}
	n.bus, n.alerts = bus, alerts
	if bus != nil {
		n.onClose(func() {
			flushCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			if err := bus.Close(flushCtx); err != nil {
				n.log.Error("flushing the usage events", slog.String("error", err.Error()))
			}
			alerts.Close(flushCtx)
		})
	}
	return nil
}

// build makes the runtime of a policy: the health monitor set to it, each
// route's chain, and its tracer. A reload calls it too.
func (n *node) build(p *policy.Policy) (*server.Runtime, error) {
	if n.mon == nil {
		m, err := health.New(p.Gateway.Health, time.Now, n.log)
		if err != nil {
			return nil, err
		}
		n.mon = m
		n.reg.MustRegister(n.mon.Collector())
	} else if err := n.mon.Reconfigure(p.Gateway.Health); err != nil {
		return nil, err
	}
	models := map[string][]string{}
	for _, m := range p.Models {
		for _, d := range m.Deployments {
			models[d.Provider.Name] = append(models[d.Provider.Name], d.Name)
		}
	}
	n.mon.Track(models)
	chains, err := filters.Build(filters.Deps{
		Policy: p, Logger: n.log, Metrics: n.reg, Secrets: secrets{}, Store: n.st, Spool: n.spool, Sticky: n.users, Health: n.mon, Probes: n.probes,
		Ledger: n.usage, Events: n.bus, Alerts: n.alerts, Answers: n.answers, Usage: n.ledgerDB, Audit: n.trail, Calibration: n.cal, Priors: n.learner,
		Loads: n.loads,
	})
	if err != nil {
		return nil, err
	}
	var auto, learning []string
	for _, r := range p.Routes {
		if r.Routing.Auto != nil {
			auto = append(auto, r.Name)
		}
		if r.Routing.Learn != nil {
			learning = append(learning, r.Name)
		}
	}
	n.cal.Retain(auto)
	n.learner.Retain(learning)
	tr, err := n.traces.Tracer(p.Gateway.Tracing)
	if err != nil {
		return nil, err
	}
	return &server.Runtime{Policy: p, Chains: chains, Tracing: tr}, nil
}

func (n *node) firstRuntime(ctx context.Context) error {
	rt, err := n.build(n.p)
	if err != nil {
		n.loads.Refused(ctx, err)
		return err
	}
	n.current.Store(rt)
	n.loads.Applied(ctx, n.p.Version)
	return nil
}

// serve starts the gRPC server Envoy calls: ext_proc and the attempt log.
func (n *node) serve(context.Context) error {
	srv := server.New(n.current.Load, n.log)
	srv.SetAdmission(n.c.admission)
	n.reg.MustRegister(srv.Collector())
	lis, creds, err := n.c.channel.Open()
	if err != nil {
		return err
	}
	n.g = grpc.NewServer(append(creds, serverOptions()...)...)
	extprocv3.RegisterExternalProcessorServer(n.g, srv)
	accesslogv3.RegisterAccessLogServiceServer(n.g, srv.AttemptLog())
	go func() { n.errc <- n.g.Serve(lis) }()
	n.srv = srv
	n.log.Info("ext_proc listening", slog.String("addr", n.c.channel.Listen))
	return nil
}

// background starts what runs beside requests: memory release, drills,
// calibration and learning, health shared between replicas and the
// capability probes.
func (n *node) background(ctx context.Context) error {
	go n.c.memory.releaseWhenIdle(ctx, n.srv.Activity, releaseHeap)
	_ = n.c.memory.followLiveHeap(ctx, debug.SetGCPercent, func() int64 {
		inFlight, _ := n.srv.Activity()
		return inFlight
	})
	go syncDrills(ctx, n.st, n.mon, time.Second, n.log)
	go n.cal.Run(ctx, calibrationPeriod)
	go n.learner.Run(ctx, calibrationPeriod)
	live := func() *policy.Policy { return n.current.Load().Policy }
	share := newOutageShare(n.st, n.mon, replicaName(), func() time.Duration { return live().Gateway.Health.Breaker.OpenTimeout }, n.log)
	go share.run(ctx, time.Second)
	chk := newChecker(n.mon, live, secrets{}, n.log)
	n.mon.OnDegraded(chk.warmBackups)
	go chk.run(ctx, time.Second)
	go newWindowShare(n.st, n.mon, replicaName(), n.log).run(ctx, time.Second)
	// Probes go to the provider from here, where the keys are, translated
	// as a real request to the model is.
	go probe.New(n.probes, probe.Options{
		Policy: live, Store: n.st, Key: chk.key, Ledger: n.usage, Metrics: n.reg, Log: n.log,
		Translate: func(t translator.Target) translator.Translator { return translate.For(policy.APIChatCompletions, t) },
	}).Run(ctx, time.Second)
	return nil
}

// serveOps serves metrics, health and readiness when -metrics is set.
func (n *node) serveOps(context.Context) error {
	if n.c.metrics == "" {
		return nil
	}
	// The ledger is not among the checks: while it is down the writer
	// keeps the records (and its spool), so it costs no request, and a
	// replica taken out of service for it would turn a ledger outage
	// into a gateway outage. Its state shows in
	// switchyard_ledger_write_errors_total and the buffered gauge.
	var checks []check
	if rc := n.rc; rc != nil {
		checks = append(checks, check{name: "redis", ping: func(ctx context.Context) error { return rc.Ping(ctx).Err() }})
	}
	mux := opsMux(n.reg, func() string { return n.current.Load().Policy.Version }, checks, func() []string { return unreachableLines(n.mon) }, n.c.pprof)
	n.hs = &http.Server{Addr: n.c.metrics, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := n.hs.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
			n.errc <- err
		}
	}()
	return nil
}

// watch applies each new version of the policy directory, or reports
// why not.
func (n *node) watch(ctx context.Context) error {
	go func() {
		n.errc <- policy.Watch(ctx, n.c.configDir, n.p.Version, n.c.poll, func(np *policy.Policy) error {
			nrt, err := n.build(np)
			if err != nil {
				return err
			}
			n.current.Store(nrt)
			n.loads.Applied(ctx, np.Version)
			return nil
		}, func(err error) { n.loads.Refused(ctx, err) })
	}()
	return nil
}

// wait runs until ctx ends or a server fails, then lets in-flight streams
// finish (Envoy drains first), but not forever.
func (n *node) wait(ctx context.Context) error {
	var err error
	select {
	case <-ctx.Done():
	case err = <-n.errc:
	}
	stopped := make(chan struct{})
	go func() { n.g.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		n.g.Stop()
	}
	if n.hs != nil {
		_ = n.hs.Close()
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
