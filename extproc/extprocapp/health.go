package extprocapp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/state/health"
	"github.com/switchyard/switchyard/state/store"
	"github.com/switchyard/switchyard/translator/healthcheck"
)

// outageRecord is what one replica writes to the shared health board when
// a provider's breaker opens on its own evidence. The store keeps the
// last one per provider: only outages are written, so a record that
// overwrites another before a replica read it says the same thing.
type outageRecord struct {
	State   string `json:"state"` // always "unavailable"
	Replica string `json:"replica"`
	Reason  string `json:"reason"`
}

// outageShare carries outages between this replica's health monitor and
// the shared store: the ones it sees are written at once, the others'
// are read every tick and applied with [health.Monitor.Report], so an
// outage one replica sees stops traffic on all of them within a tick and
// a read. A record older than the breaker's open timeout is not applied:
// its breaker has turned half-open since, and a replica that starts
// later must not be held by an old outage.
type outageShare struct {
	board   store.HealthBoard
	mon     *health.Monitor
	replica string
	// openTimeout returns the live policy's breaker open timeout.
	openTimeout func() time.Duration
	now         func() time.Time
	log         *slog.Logger

	seen map[string]time.Time // provider → stamp of the last record read
	out  chan health.Outage
}

func newOutageShare(board store.HealthBoard, mon *health.Monitor, replica string, openTimeout func() time.Duration, log *slog.Logger) *outageShare {
	s := &outageShare{
		board: board, mon: mon, replica: replica, openTimeout: openTimeout, now: time.Now, log: log,
		seen: map[string]time.Time{}, out: make(chan health.Outage, 64),
	}
	mon.OnOutage(func(o health.Outage) {
		select {
		case s.out <- o:
		default: // the writer is behind; the breaker still holds on this replica
			log.Warn("sharing a provider outage: queue full, not shared", slog.String("provider", o.Provider))
		}
	})
	return s
}

// run writes and reads outages until ctx ends, reading every tick.
func (s *outageShare) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case o := <-s.out:
			s.publish(ctx, o)
		case <-t.C:
			s.apply(ctx)
		}
	}
}

func (s *outageShare) publish(ctx context.Context, o health.Outage) {
	b, _ := json.Marshal(outageRecord{State: health.Unavailable.String(), Replica: s.replica, Reason: o.Reason})
	if err := s.board.SetHealth(ctx, o.Provider, string(b)); err != nil && ctx.Err() == nil {
		s.log.Warn("sharing a provider outage failed", slog.String("provider", o.Provider), slog.String("error", err.Error()))
	}
}

// apply reads the board and reports every outage not seen before, from
// another replica, recent enough to matter.
func (s *outageShare) apply(ctx context.Context) {
	recs, err := s.board.Healths(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("reading shared provider health failed", slog.String("error", err.Error()))
		}
		return
	}
	horizon := s.now().Add(-s.openTimeout())
	for _, h := range recs {
		if !h.Updated.After(s.seen[h.Provider]) {
			continue
		}
		s.seen[h.Provider] = h.Updated
		var r outageRecord
		if json.Unmarshal([]byte(h.State), &r) != nil || r.State != health.Unavailable.String() ||
			r.Replica == s.replica || h.Updated.Before(horizon) {
			continue
		}
		if s.mon.Report(h.Provider, "replica "+r.Replica+": "+r.Reason) {
			s.log.Info("provider outage reported by another replica", slog.String("provider", h.Provider),
				slog.String("replica", r.Replica), slog.String("reason", r.Reason))
		}
	}
}

// replicaName names this process among the replicas: host and PID.
func replicaName() string {
	host, _ := os.Hostname()
	return host + "-" + strconv.Itoa(os.Getpid())
}

// checker makes the active checks: every tick it asks the monitor which
// providers got neither traffic nor a check for the policy's interval, and
// calls each one's cheap endpoint (healthcheck.Request) directly, with
// the provider's first key. A provider is checked by one call at a time.
type checker struct {
	mon     *health.Monitor
	policy  func() *policy.Policy
	secrets filters.SecretSource
	client  *http.Client
	log     *slog.Logger

	mu       sync.Mutex
	inflight map[string]bool
	// warm takes providers to check at once (warmBackups).
	warm chan string
}

func newChecker(mon *health.Monitor, pol func() *policy.Policy, sec filters.SecretSource, log *slog.Logger) *checker {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 1
	tr.IdleConnTimeout = time.Minute
	return &checker{
		mon: mon, policy: pol, secrets: sec, log: log, inflight: map[string]bool{}, warm: make(chan string, 16),
		// A check follows no redirect: the answer of the endpoint itself counts.
		client: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
	}
}

func (c *checker) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	start := func(p *policy.Provider, timeout time.Duration) {
		if !c.claim(p.Name) {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.release(p.Name)
			r := c.check(ctx, p, timeout)
			if ctx.Err() == nil {
				c.mon.Check(r)
			}
		}()
	}
	for {
		var warm string
		select {
		case <-ctx.Done():
			return
		case warm = <-c.warm:
		case <-t.C:
		}
		p := c.policy()
		cfg := p.Gateway.Health.Checks
		if warm != "" {
			if prov := p.Provider(warm); prov != nil {
				start(prov, cfg.Timeout)
			}
			continue
		}
		if cfg.Interval <= 0 {
			continue
		}
		for _, name := range c.mon.Due(cfg.Interval) {
			if prov := p.Provider(name); prov != nil {
				start(prov, cfg.Timeout)
			}
		}
	}
}

// warmBackups asks for a check, at once, of the providers a model that
// turned degraded falls back to (the seed's level 1: the backup warmed
// before traffic moves to it), when the policy says so: its own fallbacks
// first, else its routes'. A check already under way is not repeated.
func (c *checker) warmBackups(provider, series string) {
	p := c.policy()
	if !p.Gateway.Health.WarmBackup {
		return
	}
	for _, b := range backups(p, provider, series) {
		select {
		case c.warm <- b:
		default: // the checker is behind; the next tick's checks catch up
		}
	}
}

// backups are the providers, other than provider, of the first fallback
// of the model known to the health monitor as series on provider.
func backups(p *policy.Policy, provider, series string) []string {
	var lists [][]*policy.Model
	for _, m := range p.Models {
		for _, d := range m.Deployments {
			if d.Provider.Name == provider && d.Series() == series && len(d.Fallback) > 0 {
				lists = append(lists, d.Fallback)
			}
		}
	}
	if len(lists) == 0 {
		for _, r := range p.Routes {
			lists = append(lists, r.Routing.Fallback)
		}
	}
	var out []string
	for _, l := range lists {
		for _, m := range l {
			if m.Provider.Name != provider && m.Series() != series {
				if !slices.Contains(out, m.Provider.Name) {
					out = append(out, m.Provider.Name)
				}
				break
			}
		}
	}
	return out
}

func (c *checker) claim(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inflight[name] {
		return false
	}
	c.inflight[name] = true
	return true
}

func (c *checker) release(name string) {
	c.mu.Lock()
	delete(c.inflight, name)
	c.mu.Unlock()
}

// check calls p's check endpoint once. Errors name what failed, never the
// key.
func (c *checker) check(ctx context.Context, p *policy.Provider, timeout time.Duration) health.CheckResult {
	r := health.CheckResult{Provider: p.Name}
	key, err := c.key(p)
	if err != nil {
		r.Failure, r.Error = health.ConnectFailure, "resolving the provider key failed"
		return r
	}
	up, ok := healthcheck.Request(p, key)
	if !ok {
		r.Failure, r.Error = health.ConnectFailure, "no check for kind "+string(p.Kind)
		return r
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	u := p.Scheme + "://" + net.JoinHostPort(p.Host, strconv.Itoa(p.Port)) + up.Path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		r.Failure, r.Error = health.ConnectFailure, "building the check request failed"
		return r
	}
	for _, h := range up.Header {
		req.Header.Set(h.Key, h.Value)
	}
	start := time.Now()
	resp, err := c.client.Do(req)
	r.Latency = time.Since(start)
	if err != nil {
		r.Failure, r.Error = classify(ctx, p, err)
		return r
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	r.Status = resp.StatusCode
	if r.Status >= 300 {
		r.Error = "status " + strconv.Itoa(r.Status)
	}
	return r
}

// key is the provider's first configured key that is set; "" when none.
func (c *checker) key(p *policy.Provider) (string, error) {
	if c.secrets == nil {
		return "", nil
	}
	for _, ref := range p.Keys {
		k, err := c.secrets.Resolve(ref)
		if err != nil {
			return "", err
		}
		if k != "" {
			return k, nil
		}
	}
	return "", nil
}

// classify says which layer failed — the provider's name did not
// resolve, its port refused, its TLS handshake failed — or that it timed
// out or reset, in the words an attempt's failure uses and that hold no
// URL (a URL could carry a query the operator set).
func classify(ctx context.Context, p *policy.Provider, err error) (health.Outcome, string) {
	addr := net.JoinHostPort(p.Host, strconv.Itoa(p.Port))
	var (
		dns     *net.DNSError
		record  tls.RecordHeaderError
		alert   tls.AlertError
		verify  *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		name    x509.HostnameError
	)
	switch {
	case errors.As(err, &dns):
		return health.NoAddress, "DNS: " + p.Host + " did not resolve: " + dns.Err
	case errors.As(err, &record), errors.As(err, &alert), errors.As(err, &verify), errors.As(err, &unknown), errors.As(err, &name),
		// net/http words a record header error this way, as a plain error.
		strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return health.ConnectFailure, "TLS: handshake with " + addr + " failed: " + tlsMessage(err)
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
		return health.Timeout, "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return health.ConnectFailure, "connect: " + addr + ": connection refused"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return health.ConnectFailure, fmt.Sprintf("connect: %s: %v", addr, oe.Err)
	}
	return health.Reset, err.Error()
}

// tlsMessage is a TLS failure without the URL its wrapping error holds.
func tlsMessage(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}
