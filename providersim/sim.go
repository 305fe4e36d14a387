package providersim

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Kind names the API a simulated provider speaks.
type Kind string

// The provider kinds the simulator knows.
const (
	KindOpenAI           Kind = "openai"
	KindAzureOpenAI      Kind = "azure_openai"
	KindOpenAICompatible Kind = "openai_compatible"
	KindAnthropic        Kind = "anthropic"
	KindGemini           Kind = "gemini"
)

// Kinds returns every Kind, in a stable order.
func Kinds() []Kind {
	return []Kind{KindOpenAI, KindAzureOpenAI, KindOpenAICompatible, KindAnthropic, KindGemini}
}

// ProviderConfig describes one simulated provider.
type ProviderConfig struct {
	// Name identifies the provider in the API and control URLs.
	Name string
	// Kind selects the wire format.
	Kind Kind
	// Addr is the host:port to listen on; an empty address or port 0 picks a
	// free loopback port, which is kept when the provider comes back up
	// after FaultDown.
	Addr string
	// ExpectKey, when set, is the only credential accepted in the kind's auth
	// header; requests without it get the kind's native auth error. When
	// empty any credential, or none, is accepted.
	ExpectKey string
	// Models, when set, are the only models (Azure: deployments) served;
	// others get the kind's native 404. They are also what the OpenAI
	// /v1/models endpoints list.
	Models []string
	// TLS, when set, serves HTTPS with it, as the real providers do; each
	// recorded request keeps the server name the client asked for (SNI).
	TLS *tls.Config
	// Script makes the simulated model call a tool only when the user's
	// prompt asks for it, once, and otherwise answer in text, so that a real
	// agent's session ends by itself (README.md, "Scripted mode").
	Script bool
}

// Config describes a simulator process.
type Config struct {
	// Providers are the simulated providers, each on its own listener.
	Providers []ProviderConfig
	// ControlAddr is the host:port of the control HTTP API; empty disables
	// it (in-process tests use the Sim methods instead).
	ControlAddr string
	// History is how many recent requests each provider keeps in Stats;
	// 0 means 20 and a negative value keeps none.
	History int
	// Now is the clock used for timestamps; nil means time.Now.
	Now func() time.Time
	// Sleep waits for injected latency and slow streams and returns early
	// with the context's error; nil waits on a real timer. Tests replace it
	// to observe delays without spending them.
	Sleep func(ctx context.Context, d time.Duration) error
	// Logger receives the HTTP servers' own errors; nil discards them.
	Logger *slog.Logger
	// RecordDir, when set, receives every request each provider gets as
	// one JSON file, RecordDir/<provider>/NNN.json, numbered in arrival
	// order (after any files already there), credentials redacted.
	RecordDir string
}

const defaultHistory = 20

// env is what every provider shares.
type env struct {
	now     func() time.Time
	sleep   func(ctx context.Context, d time.Duration) error
	log     *slog.Logger
	history int
	servers sync.WaitGroup
}

// Sim is a running set of simulated providers. Its methods are safe for
// concurrent use.
type Sim struct {
	env       *env
	providers map[string]*provider
	names     []string
	control   *http.Server
	ctlAddr   string
}

// Start listens on every provider address (and the control address) and
// serves until Close or Shutdown. ctx only bounds the initial listening.
func Start(ctx context.Context, cfg Config) (*Sim, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	e := &env{now: cfg.Now, sleep: cfg.Sleep, log: cfg.Logger, history: cfg.History}
	if e.now == nil {
		e.now = time.Now
	}
	if e.sleep == nil {
		e.sleep = sleepContext
	}
	if e.log == nil {
		e.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	switch {
	case e.history == 0:
		e.history = defaultHistory
	case e.history < 0:
		e.history = 0
	}
	s := &Sim{env: e, providers: map[string]*provider{}}
	for _, pc := range cfg.Providers {
		p := newProvider(pc, e)
		if cfg.RecordDir != "" {
			rec, err := newRecorder(filepath.Join(cfg.RecordDir, pc.Name))
			if err != nil {
				s.Close()
				return nil, fmt.Errorf("provider %s: recording: %w", pc.Name, err)
			}
			p.rec = rec
		}
		if err := p.start(ctx); err != nil {
			s.Close()
			return nil, fmt.Errorf("provider %s: %w", pc.Name, err)
		}
		s.providers[pc.Name] = p
		s.names = append(s.names, pc.Name)
	}
	if cfg.ControlAddr != "" {
		ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.ControlAddr)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("control listener: %w", err)
		}
		s.ctlAddr = ln.Addr().String()
		s.control = e.server(s.controlHandler())
		e.serve(s.control, ln)
	}
	return s, nil
}

func (c Config) validate() error {
	seen := map[string]bool{}
	for _, p := range c.Providers {
		if p.Name == "" {
			return errors.New("provider name must not be empty")
		}
		if seen[p.Name] {
			return fmt.Errorf("provider %s: duplicate name", p.Name)
		}
		if c.RecordDir != "" && (strings.ContainsAny(p.Name, `/\`) || p.Name == "." || p.Name == "..") {
			return fmt.Errorf("provider %s: a recorded provider's name is a directory name and may not hold a path", p.Name)
		}
		seen[p.Name] = true
		if newDialect(p.Kind) == nil {
			return fmt.Errorf("provider %s: unknown kind %q", p.Name, p.Kind)
		}
	}
	return nil
}

// Names returns the provider names in configuration order.
func (s *Sim) Names() []string { return append([]string(nil), s.names...) }

// Kind returns the kind of the named provider, or "" if there is none.
func (s *Sim) Kind(name string) Kind {
	if p, ok := s.providers[name]; ok {
		return p.cfg.Kind
	}
	return ""
}

// Addr returns the host:port the named provider listens on (even while it
// is down), or "" if there is no such provider.
func (s *Sim) Addr(name string) string {
	p, ok := s.providers[name]
	if !ok {
		return ""
	}
	return p.address()
}

// URL returns the named provider's base URL: "http://" + Addr, or
// "https://" when it serves TLS.
func (s *Sim) URL(name string) string {
	p, ok := s.providers[name]
	if !ok {
		return ""
	}
	if p.cfg.TLS != nil {
		return "https://" + p.address()
	}
	return "http://" + p.address()
}

// ControlURL returns the base URL of the control API, or "" when it is
// disabled.
func (s *Sim) ControlURL() string {
	if s.ctlAddr == "" {
		return ""
	}
	return "http://" + s.ctlAddr
}

// ErrUnknownProvider is returned for a provider name the Sim does not have.
var ErrUnknownProvider = errors.New("unknown provider")

func (s *Sim) provider(name string) (*provider, error) {
	p, ok := s.providers[name]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownProvider, name)
	}
	return p, nil
}

// SetFault replaces the named provider's fault.
func (s *Sim) SetFault(name string, f Fault) error {
	p, err := s.provider(name)
	if err != nil {
		return err
	}
	return p.setFault(f)
}

// ClearFault removes the named provider's fault, reopening its listener if
// it was down.
func (s *Sim) ClearFault(name string) error {
	p, err := s.provider(name)
	if err != nil {
		return err
	}
	return p.clearFault()
}

// Stats returns a copy of the named provider's statistics.
func (s *Sim) Stats(name string) (Stats, error) {
	p, err := s.provider(name)
	if err != nil {
		return Stats{}, err
	}
	return p.statsSnapshot(), nil
}

// Reset clears every provider's fault and statistics.
func (s *Sim) Reset() error {
	var errs []error
	for _, name := range s.names {
		errs = append(errs, s.providers[name].reset())
	}
	return errors.Join(errs...)
}

// Close stops every listener at once, dropping requests in flight, and
// waits for the servers to return.
func (s *Sim) Close() error {
	var errs []error
	for _, p := range s.providers {
		errs = append(errs, p.close())
	}
	if s.control != nil {
		errs = append(errs, s.control.Close())
	}
	s.env.servers.Wait()
	return errors.Join(errs...)
}

// Shutdown stops accepting connections and waits for requests in flight to
// finish, or for ctx to end, whichever comes first.
func (s *Sim) Shutdown(ctx context.Context) error {
	var errs []error
	for _, p := range s.providers {
		errs = append(errs, p.shutdown(ctx))
	}
	if s.control != nil {
		errs = append(errs, s.control.Shutdown(ctx))
	}
	s.env.servers.Wait()
	return errors.Join(errs...)
}

// server serves HTTP/1.1 and, on a plain listener, HTTP/2 by prior
// knowledge (h2c) too, as a self-hosted model server behind an HTTP/2
// front does: the gateway reaches such a provider over HTTP/2 when its
// policy says so (connections.protocol).
func (e *env) server(h http.Handler) *http.Server {
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetHTTP2(true)
	protos.SetUnencryptedHTTP2(true)
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(e.log.Handler(), slog.LevelWarn),
		Protocols:         &protos,
	}
}

func (e *env) serve(srv *http.Server, ln net.Listener) {
	e.servers.Go(func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			e.log.Warn("providersim: server stopped", "addr", ln.Addr().String(), "err", err)
		}
	})
}

func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
