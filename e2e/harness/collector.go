package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/switchyard/switchyard/stack"
)

// Collector is a real OpenTelemetry Collector (e2e/otelcol: the OTLP
// receiver and the file exporter) that writes every span it receives to a
// file, for a test to read back.
type Collector struct {
	// GRPC and HTTP are the receiver's OTLP/gRPC and OTLP/HTTP addresses,
	// host:port, as gateway.tracing.collector takes them.
	GRPC, HTTP string
	file       string
	log        string
	cmd        *exec.Cmd
	done       chan struct{}
}

// FindCollector returns the path of the collector binary: $SWITCHYARD_BIN's
// otelcol (make build builds it there), else one built from e2e/otelcol
// into dir.
func FindCollector(root, dir string) (string, error) {
	if b := os.Getenv("SWITCHYARD_BIN"); b != "" {
		if p := filepath.Join(b, "otelcol"); fileExists(p) {
			return p, nil
		}
	}
	out := filepath.Join(dir, "otelcol")
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = filepath.Join(root, "e2e", "otelcol")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the collector (e2e/otelcol): %w\n%s", err, b)
	}
	return out, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// StartCollector runs a collector with its configuration, spans and log
// in dir, and waits until both receivers listen. cpus, when set, pins it
// (a taskset list), away from the gateway a benchmark measures.
func StartCollector(ctx context.Context, root, dir, cpus string) (*Collector, error) {
	bin, err := FindCollector(root, dir)
	if err != nil {
		return nil, err
	}
	c := &Collector{GRPC: stack.FreeAddr(), HTTP: stack.FreeAddr(), file: filepath.Join(dir, "spans.jsonl"), log: filepath.Join(dir, "otelcol.log"), done: make(chan struct{})}
	// The collector's own telemetry is off: its default metrics port would
	// clash between tests running at once.
	cfg := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      grpc: {endpoint: %q}
      http: {endpoint: %q}
exporters:
  file: {path: %q, flush_interval: 100ms}
service:
  telemetry: {metrics: {level: none}}
  pipelines:
    traces: {receivers: [otlp], exporters: [file]}
`, c.GRPC, c.HTTP, c.file)
	path := filepath.Join(dir, "otelcol.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	lf, err := os.Create(c.log)
	if err != nil {
		return nil, err
	}
	c.cmd = exec.Command(bin, "--config", path)
	if cpus != "" {
		c.cmd = exec.Command("taskset", "-c", cpus, bin, "--config", path)
	}
	c.cmd.Stdout, c.cmd.Stderr = lf, lf
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := c.cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("starting the collector: %w", err)
	}
	go func() { _ = c.cmd.Wait(); lf.Close(); close(c.done) }()
	for _, a := range []string{c.GRPC, c.HTTP} {
		if err := waitListening(ctx, a, c.done); err != nil {
			c.Close()
			b, _ := os.ReadFile(c.log)
			return nil, fmt.Errorf("the collector does not listen on %s: %w\n%s", a, err, b)
		}
	}
	return c, nil
}

func waitListening(ctx context.Context, a string, done <-chan struct{}) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if conn, err := net.DialTimeout("tcp", a, 200*time.Millisecond); err == nil {
			conn.Close()
			return nil
		}
		select {
		case <-done:
			return errors.New("it exited")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return errors.New("timed out")
}

// Close stops the collector.
func (c *Collector) Close() {
	if c.cmd.Process != nil {
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-c.done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
			<-c.done
		}
	}
}

// Raw returns the file exporter's output so far: one OTLP/JSON export
// request per line.
func (c *Collector) Raw() ([]byte, error) {
	b, err := os.ReadFile(c.file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// Span is one span as the collector received it.
type Span struct {
	// Service is its resource's service.name.
	Service                   string
	TraceID, SpanID, ParentID string
	Name                      string
	Kind                      int
	Attributes                map[string]any
	Events                    []SpanEvent
	StatusCode                int
	StatusMessage             string
}

// SpanEvent is one event of a span.
type SpanEvent struct {
	Name       string
	Attributes map[string]any
}

// Spans returns every span the collector has written so far.
func (c *Collector) Spans() ([]Span, error) {
	raw, err := c.Raw()
	if err != nil {
		return nil, err
	}
	var out []Span
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var req otlpTraces
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			return nil, fmt.Errorf("the collector's file holds a line that is not OTLP/JSON: %w", err)
		}
		for _, rs := range req.ResourceSpans {
			service, _ := attributes(rs.Resource.Attributes)["service.name"].(string)
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					sp := Span{Service: service, TraceID: s.TraceID, SpanID: s.SpanID, ParentID: s.ParentSpanID, Name: s.Name, Kind: s.Kind,
						Attributes: attributes(s.Attributes), StatusCode: s.Status.Code, StatusMessage: s.Status.Message}
					for _, e := range s.Events {
						sp.Events = append(sp.Events, SpanEvent{Name: e.Name, Attributes: attributes(e.Attributes)})
					}
					out = append(out, sp)
				}
			}
		}
	}
	return out, sc.Err()
}

// otlpTraces is the part of OTLP/JSON's ExportTraceServiceRequest the
// tests read; its IDs are hex, as OTLP/JSON writes them.
type otlpTraces struct {
	ResourceSpans []struct {
		Resource struct {
			Attributes []otlpKV `json:"attributes"`
		} `json:"resource"`
		ScopeSpans []struct {
			Spans []struct {
				TraceID      string   `json:"traceId"`
				SpanID       string   `json:"spanId"`
				ParentSpanID string   `json:"parentSpanId"`
				Name         string   `json:"name"`
				Kind         int      `json:"kind"`
				Attributes   []otlpKV `json:"attributes"`
				Events       []struct {
					Name       string   `json:"name"`
					Attributes []otlpKV `json:"attributes"`
				} `json:"events"`
				Status struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"status"`
			} `json:"spans"`
		} `json:"scopeSpans"`
	} `json:"resourceSpans"`
}

type otlpKV struct {
	Key   string    `json:"key"`
	Value otlpValue `json:"value"`
}

type otlpValue struct {
	StringValue *string  `json:"stringValue"`
	IntValue    *string  `json:"intValue"` // OTLP/JSON writes 64-bit integers as strings
	DoubleValue *float64 `json:"doubleValue"`
	BoolValue   *bool    `json:"boolValue"`
	ArrayValue  *struct {
		Values []otlpValue `json:"values"`
	} `json:"arrayValue"`
}

// value is v as Go: string, int64, float64, bool or []any.
func (v otlpValue) value() any {
	switch {
	case v.StringValue != nil:
		return *v.StringValue
	case v.IntValue != nil:
		n, _ := strconv.ParseInt(*v.IntValue, 10, 64)
		return n
	case v.DoubleValue != nil:
		return *v.DoubleValue
	case v.BoolValue != nil:
		return *v.BoolValue
	case v.ArrayValue != nil:
		out := make([]any, len(v.ArrayValue.Values))
		for i, e := range v.ArrayValue.Values {
			out[i] = e.value()
		}
		return out
	}
	return nil
}

func attributes(kvs []otlpKV) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = kv.Value.value()
	}
	return m
}
