package tracing

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/credentials"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
)

// ServiceName names ext_proc in its spans' resource; Envoy's spans are
// "switchyard-envoy".
const ServiceName = "switchyard-extproc"

// Bounds of the export path. The queue holds kept requests waiting for
// their spans to be built; the batch processor's queue the spans built;
// an export that fails is retried for a moment, then its spans are
// dropped.
const (
	queuedTraces  = 1024
	queuedSpans   = 8192
	batchSpans    = 512
	batchTimeout  = time.Second
	exportTimeout = 5 * time.Second
	retryFor      = 2 * time.Second
)

// Metrics count what the export path did with spans, for every pipeline
// of the process.
type Metrics struct {
	exported prometheus.Counter
	dropped  *prometheus.CounterVec
	// sampled, kept and unkept count the decisions, resolved once: one
	// is taken per request.
	sampled, kept, unkept prometheus.Counter
}

// NewMetrics registers the tracing metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		exported: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchyard_tracing_spans_exported_total",
			Help: "Spans ext_proc's collector accepted.",
		}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_tracing_spans_dropped_total",
			Help: "Spans ext_proc dropped instead of holding a request: queue_full (the trace's, when requests ended faster than spans could be exported), export_failed (the collector did not take them).",
		}, []string{"reason"}),
	}
	traces := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchyard_tracing_traces_total",
		Help: "Requests ended with tracing on, by decision: sampled (Envoy's sample or the client's), kept (failed, fell back or slow, outside the sample), dropped (neither).",
	}, []string{"decision"})
	m.sampled, m.kept, m.unkept = traces.WithLabelValues("sampled"), traces.WithLabelValues("kept"), traces.WithLabelValues("dropped")
	reg.MustRegister(m.exported, m.dropped, traces)
	return m
}

// job is one kept request, its spans to build.
type job struct {
	x       *filters.Exchange
	cause   error
	end     time.Time
	content int // bytes of content per message list; 0: none
}

// Pipeline exports the spans of kept requests to one collector: the
// bounded queue, the worker that builds spans, the SDK's batch span
// processor and the OTLP exporter. It outlives policy reloads that keep
// the collector; [Pipelines] makes and closes them.
type Pipeline struct {
	export string // the collector settings it serves
	queue  chan job
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	m      *Metrics
	log    *slog.Logger

	// mu orders enqueues before the queue's close: a request of a policy
	// whose collector was replaced may end after its pipeline closed.
	mu      sync.RWMutex
	closed  bool
	stopped chan struct{}
}

// exportKey is what decides the collector a pipeline talks to.
func exportKey(t *policy.Tracing) string {
	return t.Protocol + " " + t.Collector + " tls=" + strconv.FormatBool(t.TLS)
}

func newPipeline(t *policy.Tracing, m *Metrics, log *slog.Logger) (*Pipeline, error) {
	exp, err := exporter(t)
	if err != nil {
		return nil, err
	}
	bsp := sdktrace.NewBatchSpanProcessor(&counting{SpanExporter: exp, m: m},
		sdktrace.WithMaxQueueSize(queuedSpans), sdktrace.WithMaxExportBatchSize(batchSpans),
		sdktrace.WithBatchTimeout(batchTimeout), sdktrace.WithExportTimeout(exportTimeout+retryFor),
		// Only the worker (and the judge's gradings) write spans, never a
		// request: a full queue holds the worker, whose own queue then
		// drops whole traces, counted.
		sdktrace.WithBlocking())
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(bsp),
		// Traces are kept or not before their spans are built.
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithIDGenerator(ids{}),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", ServiceName))),
	)
	p := &Pipeline{
		export: exportKey(t), queue: make(chan job, queuedTraces), tp: tp, tracer: tp.Tracer("github.com/switchyard/switchyard/extproc/tracing"),
		m: m, log: log, stopped: make(chan struct{}),
	}
	go p.work()
	return p, nil
}

func exporter(t *policy.Tracing) (sdktrace.SpanExporter, error) {
	endpoint := net.JoinHostPort(t.Host, strconv.Itoa(t.Port))
	if t.Protocol == policy.TraceHTTP {
		opts := []otlptracehttp.Option{otlptracehttp.WithEndpoint(endpoint), otlptracehttp.WithTimeout(exportTimeout),
			otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: true, InitialInterval: 100 * time.Millisecond, MaxInterval: time.Second, MaxElapsedTime: retryFor})}
		if !t.TLS {
			opts = append(opts, otlptracehttp.WithInsecure())
		}
		return otlptracehttp.New(context.Background(), opts...)
	}
	opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(endpoint), otlptracegrpc.WithTimeout(exportTimeout),
		otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: true, InitialInterval: 100 * time.Millisecond, MaxInterval: time.Second, MaxElapsedTime: retryFor})}
	if t.TLS {
		opts = append(opts, otlptracegrpc.WithTLSCredentials(credentials.NewClientTLSFromCert(nil, "")))
	} else {
		opts = append(opts, otlptracegrpc.WithInsecure())
	}
	return otlptracegrpc.New(context.Background(), opts...)
}

// enqueue hands a kept request to the worker, or drops it, counted, when
// the queue is full: the request never waits.
func (p *Pipeline) enqueue(j job) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.closed {
		select {
		case p.queue <- j:
			return
		default:
		}
	}
	p.m.dropped.WithLabelValues("queue_full").Add(float64(spanCount(j.x)))
}

func (p *Pipeline) work() {
	defer close(p.stopped)
	for j := range p.queue {
		build(p.tracer, j)
	}
}

// Tracer is the tracer of the pipeline's provider, for spans built live
// (a judge's grading).
func (p *Pipeline) Tracer() trace.Tracer { return p.tracer }

// Close builds what is queued, exports it and stops, within ctx.
func (p *Pipeline) Close(ctx context.Context) error {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.queue)
	}
	p.mu.Unlock()
	select {
	case <-p.stopped:
	case <-ctx.Done():
		return ctx.Err()
	}
	return p.tp.Shutdown(ctx)
}

// counting counts the spans its exporter's collector took and the ones
// it did not.
type counting struct {
	sdktrace.SpanExporter
	m *Metrics
}

func (c *counting) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := c.SpanExporter.ExportSpans(ctx, spans)
	if err != nil {
		c.m.dropped.WithLabelValues("export_failed").Add(float64(len(spans)))
		return err
	}
	c.m.exported.Add(float64(len(spans)))
	return nil
}

// ids draws span and trace IDs, except the request span's, drawn when the
// request arrived and handed over in the context ([withSpanID]).
type ids struct{}

type spanIDKey struct{}

func withSpanID(ctx context.Context, id trace.SpanID) context.Context {
	return context.WithValue(ctx, spanIDKey{}, id)
}

func (ids) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	return newTraceID(), ids{}.NewSpanID(ctx, trace.TraceID{})
}

func (ids) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if id, ok := ctx.Value(spanIDKey{}).(trace.SpanID); ok {
		return id
	}
	return newSpanID()
}

func newTraceID() trace.TraceID {
	var id trace.TraceID
	for !id.IsValid() {
		_, _ = rand.Read(id[:])
	}
	return id
}

func newSpanID() trace.SpanID {
	var id trace.SpanID
	for !id.IsValid() {
		_, _ = rand.Read(id[:])
	}
	return id
}

// sampledByRatio is the head decision for a trace ext_proc starts itself
// (no parent from Envoy): by its trace ID, as OpenTelemetry's
// TraceIDRatioBased sampler decides, so every process sampling the same
// trace by the same ratio agrees.
func sampledByRatio(id trace.TraceID, ratio float64) bool {
	if ratio >= 1 {
		return true
	}
	bound := uint64(ratio * (1 << 63))
	return binary.BigEndian.Uint64(id[8:16])>>1 < bound
}

// Pipelines keeps one pipeline per collector across policy reloads: a
// reload that keeps the collector keeps its pipeline (and what it has
// queued); one that changes it closes the old one once drained.
type Pipelines struct {
	m   *Metrics
	log *slog.Logger

	mu  sync.Mutex
	cur *Pipeline
}

// NewPipelines returns an empty set; metrics are registered on reg.
func NewPipelines(reg prometheus.Registerer, log *slog.Logger) *Pipelines {
	return &Pipelines{m: NewMetrics(reg), log: log}
}

// drainTimeout bounds how long a replaced pipeline may take to export
// what it holds.
const drainTimeout = 10 * time.Second

// Tracer returns the tracer of a policy version: nil when it traces
// nothing, else one sharing the pipeline of the collector it names.
func (ps *Pipelines) Tracer(t *policy.Tracing) (*Tracer, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	old := ps.cur
	if t == nil {
		ps.cur = nil
		ps.retire(old)
		return nil, nil
	}
	if old == nil || old.export != exportKey(t) {
		p, err := newPipeline(t, ps.m, ps.log)
		if err != nil {
			return nil, err
		}
		ps.cur = p
		ps.retire(old)
	}
	return &Tracer{cfg: t, p: ps.cur, m: ps.m}, nil
}

// retire closes a pipeline no policy uses any more, in the background:
// requests of the old policy still in flight drop their traces, counted.
func (ps *Pipelines) retire(p *Pipeline) {
	if p == nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
		defer cancel()
		if err := p.Close(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			ps.log.Warn("tracing: closing the previous collector's exporter", slog.String("error", err.Error()))
		}
	}()
}

// Close closes the current pipeline, exporting what it holds within ctx.
func (ps *Pipelines) Close(ctx context.Context) error {
	ps.mu.Lock()
	p := ps.cur
	ps.cur = nil
	ps.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.Close(ctx)
}
