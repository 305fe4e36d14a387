// Package xdsapp wires the control plane process: flags, policy loading and
// watching, the ADS gRPC server and the metrics endpoint.
package xdsapp

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"

	"github.com/switchyard/switchyard/audit"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/configs/reload"
	"github.com/switchyard/switchyard/envoy/channel"
	"github.com/switchyard/switchyard/xds/controlplane"
	"github.com/switchyard/switchyard/xds/resources"
)

type config struct {
	configDir string
	channel   channel.Server
	metrics   string
	accessLog bool
	caFile    string
	logLevel  string
	poll      time.Duration
	auditLog  string
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("xds", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.configDir, "config", "configs/local", "policy directory")
	// xDS carries no secret (provider keys stay in ext_proc), so plain TCP
	// may serve Envoys on other hosts; -tls-* make them prove who they are.
	c.channel.PlainTCP = true
	c.channel.Register(fs, "127.0.0.1:18000", "Envoy's ADS")
	fs.StringVar(&c.metrics, "metrics", "127.0.0.1:18003", "address of /metrics and /healthz (empty: off)")
	fs.BoolVar(&c.accessLog, "access-log", true, "configure Envoy's JSON access log on stdout")
	fs.StringVar(&c.caFile, "ca-file", resources.DefaultCACertFile, "CA bundle Envoy uses to verify https providers")
	fs.StringVar(&c.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.DurationVar(&c.poll, "poll", 2*time.Second, "how often the policy directory is re-read besides file events")
	fs.StringVar(&c.auditLog, "audit-log", "", "file the audit trail is appended to; empty: stderr, as lines with \"kind\":\"audit\"")
	return c, fs.Parse(args)
}

// Run runs the control plane until ctx ends. With the first argument
// "check" it only validates the policy and reports.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	check := len(args) > 0 && args[0] == "check"
	if check {
		args = args[1:]
	}
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	log := newLogger(stderr, c.logLevel)
	p, err := load(c.configDir)
	if check {
		if err != nil {
			fmt.Fprintln(stderr, err)
			return errors.New("policy refused")
		}
		fmt.Fprintf(stdout, "policy %s is valid (version %s)\n", c.configDir, p.Version)
		for _, w := range p.Warnings(time.Now()) {
			fmt.Fprintf(stdout, "warning: %v\n", w)
		}
		return nil
	}
	trail, trailFile, terr := audit.Open(c.auditLog, stderr, "xds")
	if terr != nil {
		return terr
	}
	defer trailFile.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	loads := reload.New(reg, "xds", c.configDir, log, trail)
	if err != nil {
		loads.Refused(ctx, err)
		return err
	}

	cp := controlplane.New(resources.Options{AccessLog: c.accessLog, CACertFile: c.caFile}, log)
	if err := cp.Apply(ctx, p); err != nil {
		return fmt.Errorf("building the first snapshot: %w", err)
	}
	loads.Applied(ctx, p.Version)
	warn(ctx, log, p)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lis, creds, err := c.channel.Open()
	if err != nil {
		return err
	}
	g := grpc.NewServer(append(creds, controlplane.ServerOptions()...)...)
	cp.Register(ctx, g)
	errc := make(chan error, 3)
	go func() { errc <- g.Serve(lis) }()
	log.Info("ADS listening", slog.String("addr", lis.Addr().String()))

	var hs *http.Server
	if c.metrics != "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, cp.Version()) })
		hs = &http.Server{Addr: c.metrics, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := hs.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
	}
	go func() {
		errc <- policy.Watch(ctx, c.configDir, p.Version, c.poll, func(np *policy.Policy) error {
			if err := cp.Apply(ctx, np); err != nil {
				return err
			}
			loads.Applied(ctx, np.Version)
			warn(ctx, log, np)
			return nil
		}, func(err error) { loads.Refused(ctx, err) })
	}()

	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	g.GracefulStop()
	if hs != nil {
		_ = hs.Close()
	}
	return err
}

func load(dir string) (*policy.Policy, error) {
	return policy.Load(dir)
}

// warn logs what an applied policy holds that its operator should
// change: models their vendors deprecated or retired.
func warn(ctx context.Context, log *slog.Logger, p *policy.Policy) {
	for _, w := range p.Warnings(time.Now()) {
		log.WarnContext(ctx, "policy warning", slog.String("version", p.Version), slog.String("warning", w.Error()))
	}
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})).With(slog.String("process", "xds"))
}
