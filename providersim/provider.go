package providersim

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// maxBodyBytes matches Anthropic's 32 MB request limit, the largest of the
// simulated providers.
const maxBodyBytes = 32 << 20

var (
	errClosed       = errors.New("simulator closed")
	errInvalidFault = errors.New("invalid fault")
)

// provider is one simulated provider: a listener that comes and goes with
// FaultDown, the fault in force and the statistics.
type provider struct {
	cfg ProviderConfig
	d   dialect
	env *env
	mux *http.ServeMux

	mu     sync.Mutex
	addr   string
	srv    *http.Server // nil while down
	closed bool
	fault  *Fault
	stats  statsRecorder
	seq    int
	window rateWindow
	rec    *recorder // nil unless Config.RecordDir is set
}

// rateWindow counts what the provider's rate-limit headers report. Real
// providers limit per minute, so the count restarts every minute: a
// simulator that ran for hours must not report an exhausted quota only
// because it served more than a minute's limit in all.
type rateWindow struct {
	start    time.Time
	requests int
	tokens   int
}

const rateWindowLength = time.Minute

func (w *rateWindow) roll(now time.Time) {
	if now.Sub(w.start) >= rateWindowLength || now.Before(w.start) {
		*w = rateWindow{start: now}
	}
}

func newProvider(cfg ProviderConfig, e *env) *provider {
	p := &provider{cfg: cfg, d: newDialect(cfg.Kind), env: e, mux: http.NewServeMux(), addr: cfg.Addr}
	if p.addr == "" {
		p.addr = "127.0.0.1:0"
	}
	p.stats = newStatsRecorder(e.history)
	p.d.routes(p)
	p.handle("/", func(x *exchange) {
		e := p.d.statusError(http.StatusNotFound, 0)
		e.code, e.message = "", fmt.Sprintf("Invalid URL (%s %s)", x.r.Method, x.r.URL.Path)
		x.fail(e)
	})
	return p
}

func (p *provider) start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.listenLocked(ctx)
}

// listenLocked brings the listener up if it is down. The first call may
// pick a port; later calls reuse it so clients can reconnect.
func (p *provider) listenLocked(ctx context.Context) error {
	if p.closed {
		return errClosed
	}
	if p.srv != nil {
		return nil
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", p.addr)
	if err != nil {
		return err
	}
	p.addr = ln.Addr().String()
	if p.cfg.TLS != nil {
		ln = tls.NewListener(ln, p.cfg.TLS)
	}
	p.srv = p.env.server(p)
	p.env.serve(p.srv, ln)
	return nil
}

// stopLocked closes the listener and every open connection, so the
// provider looks unreachable rather than slow.
func (p *provider) stopLocked() error {
	if p.srv == nil {
		return nil
	}
	err := p.srv.Close()
	p.srv = nil
	return err
}

func (p *provider) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	return p.stopLocked()
}

func (p *provider) shutdown(ctx context.Context) error {
	p.mu.Lock()
	srv := p.srv
	p.srv = nil
	p.closed = true
	p.mu.Unlock()
	if srv == nil {
		return nil
	}
	// Not under the lock: handlers still running need it to record stats.
	return srv.Shutdown(ctx)
}

func (p *provider) address() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addr
}

func (p *provider) setFault(f Fault) error {
	if err := f.validate(); err != nil {
		return fmt.Errorf("%w: %w", errInvalidFault, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errClosed
	}
	p.fault = &f
	if f.Mode == FaultDown {
		return p.stopLocked()
	}
	return p.listenLocked(context.Background())
}

func (p *provider) clearFault() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fault = nil
	return p.listenLocked(context.Background())
}

func (p *provider) reset() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.reset()
	p.window = rateWindow{}
	p.fault = nil
	return p.listenLocked(context.Background())
}

func (p *provider) statsSnapshot() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats.snapshot()
}

// quota is the rate-limit state reported in one response's headers.
type quota struct {
	requestID string
	requests  int // requests seen this minute, this one included
	tokens    int // tokens served this minute
	remaining *int64
	now       time.Time
}

const (
	limitRequests = 10_000
	limitTokens   = 1_000_000
)

func (q quota) remainingRequests() int64 {
	if q.remaining != nil {
		return *q.remaining
	}
	return max(0, int64(limitRequests-q.requests))
}

func (q quota) remainingTokens() int64 {
	if q.remaining != nil {
		return *q.remaining
	}
	return max(0, int64(limitTokens-q.tokens))
}

// admit records the request and takes the fault that applies to it,
// counting it against the fault's Count.
func (p *provider) admit(r *http.Request, body []byte, stream bool) (Fault, quota) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.request(r, body)
	p.seq++
	now := p.env.now()
	p.window.roll(now)
	p.window.requests++
	q := quota{
		requestID: fmt.Sprintf("%08d", p.seq),
		requests:  p.window.requests,
		tokens:    p.window.tokens,
		now:       now,
	}
	if p.fault == nil {
		return Fault{}, q
	}
	f := *p.fault
	q.remaining = f.QuotaRemaining
	if f.Mode == FaultDown || (f.streamOnly() && !stream) || (f.Mode == FaultDrip && stream) {
		return Fault{}, q
	}
	if p.fault.Count > 0 {
		p.fault.Count--
		if p.fault.Count == 0 {
			p.fault = nil
		}
	}
	return f, q
}

// record writes the request to the recording, if there is one.
func (p *provider) record(r *http.Request, body []byte) {
	if p.rec == nil {
		return
	}
	p.mu.Lock()
	n := p.rec.next
	p.rec.next++
	p.mu.Unlock()
	if err := p.rec.write(n, r, body); err != nil {
		p.env.log.Warn("providersim: recording a request", "provider", p.cfg.Name, "err", err)
	}
}

func (p *provider) nextSeq() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	return p.seq
}

func (p *provider) served(prompt, completion int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.tokens(prompt, completion)
	p.window.roll(p.env.now())
	p.window.tokens += prompt + completion
}

func (p *provider) responded(status int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.status(status)
}

// knownModel reports whether model may be served.
func (p *provider) knownModel(model string) bool {
	if len(p.cfg.Models) == 0 {
		return true
	}
	for _, m := range p.cfg.Models {
		if m == model {
			return true
		}
	}
	return false
}

type exchangeKey struct{}

// ServeHTTP is the path every request takes: record it, apply the fault,
// check the credential, then hand it to the kind's endpoint.
func (p *provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, readErr := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	p.record(r, body)
	sw := &statusWriter{ResponseWriter: w}
	stream := readErr == nil && p.d.streaming(r, body)
	fault, q := p.admit(r, body, stream)
	defer func() { p.responded(sw.code()) }()
	p.d.headers(sw.Header(), q)
	x := &exchange{p: p, w: sw, r: r, body: body, fault: fault, requestID: q.requestID}
	if readErr != nil {
		e := p.d.statusError(http.StatusRequestEntityTooLarge, 0)
		e.code, e.message = "", "Request exceeds the maximum allowed number of bytes."
		x.fail(e)
		return
	}
	if fault.Mode == FaultLatency {
		if p.env.sleep(r.Context(), time.Duration(fault.Delay)) != nil {
			return
		}
	}
	switch fault.Mode {
	case FaultDown503:
		sw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		sw.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(sw, "no healthy upstream")
		return
	case FaultStatus:
		x.writeStatusFault()
		return
	case FaultMalformed:
		x.writeMalformed(stream)
		return
	}
	if p.cfg.ExpectKey != "" && !p.d.authorized(r, p.cfg.ExpectKey) {
		x.fail(p.d.authError())
		return
	}
	p.mux.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), exchangeKey{}, x)))
}

// handle registers an endpoint that receives the request's exchange.
func (p *provider) handle(pattern string, fn func(x *exchange)) {
	p.mux.HandleFunc(pattern, func(_ http.ResponseWriter, r *http.Request) {
		x := r.Context().Value(exchangeKey{}).(*exchange)
		x.r = r
		fn(x)
	})
}

func keyMatches(got, want string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// exchange is one request on its way through a provider.
type exchange struct {
	p         *provider
	w         http.ResponseWriter
	r         *http.Request
	body      []byte
	fault     Fault
	requestID string
}

func (x *exchange) now() time.Time { return x.p.env.now() }

// answer is the simulated model's reply to c, by the scripted rules when
// the provider runs scripted.
func (x *exchange) answer(c conversation) reply {
	c.scripted = x.p.cfg.Script
	return respond(c)
}

func (x *exchange) fail(e apiError) { x.p.d.writeError(x.w, e) }

func (x *exchange) writeJSON(status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		x.fail(apiError{status: http.StatusInternalServerError, typ: "api_error", message: "simulator could not encode its reply"})
		return
	}
	x.w.Header().Set("Content-Type", "application/json")
	x.w.WriteHeader(status)
	if x.fault.Mode == FaultDrip {
		x.drip(b)
		return
	}
	x.w.Write(b)
}

// drip writes b one byte at a time, Fault.Delay apart, until it is all
// sent or the client gives up.
func (x *exchange) drip(b []byte) {
	rc := http.NewResponseController(x.w)
	for i := range b {
		if i > 0 && x.p.env.sleep(x.r.Context(), time.Duration(x.fault.Delay)) != nil {
			return
		}
		if _, err := x.w.Write(b[i : i+1]); err != nil {
			return
		}
		rc.Flush()
	}
}

func (x *exchange) writeStatusFault() {
	f := x.fault
	if f.Body == "" {
		e := x.p.d.statusError(f.Status, f.retryAfter())
		for k, v := range f.Headers {
			x.w.Header().Set(k, v)
		}
		x.fail(e)
		return
	}
	h := x.w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	if json.Valid([]byte(f.Body)) {
		h.Set("Content-Type", "application/json")
	}
	for k, v := range f.Headers {
		h.Set(k, v)
	}
	x.w.WriteHeader(f.Status)
	io.WriteString(x.w, f.Body)
}

func (x *exchange) writeMalformed(stream bool) {
	ct, body := x.p.d.malformed(stream)
	if x.fault.Body != "" {
		body = []byte(x.fault.Body)
	}
	x.w.Header().Set("Content-Type", ct)
	x.w.WriteHeader(http.StatusOK)
	x.w.Write(body)
}

// writeStream sends events one by one, flushing each, and applies the
// slow_stream, drip_stream and cut_stream faults. events must hold the
// whole wire form, framing included.
func (x *exchange) writeStream(contentType string, events [][]byte) {
	h := x.w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", "no-cache")
	x.w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(x.w)
	cut := -1
	if x.fault.Mode == FaultCutStream {
		// The final event is never sent: a cut stream must look unfinished.
		cut = min(x.fault.Chunks, len(events)-1)
	}
	drip := x.fault.Mode == FaultDripStream
	if drip {
		cut = len(events) - 1
	}
	for i, ev := range events {
		if i == cut && drip {
			x.keepAlive(contentType, rc)
			return
		}
		if i == cut {
			rc.Flush()
			// The documented way to drop the connection without finishing
			// the chunked body.
			panic(http.ErrAbortHandler)
		}
		if i > 0 && (x.fault.Mode == FaultSlowStream || drip) {
			if x.p.env.sleep(x.r.Context(), time.Duration(x.fault.Delay)) != nil {
				return
			}
		}
		if _, err := x.w.Write(ev); err != nil {
			return
		}
		rc.Flush()
	}
}

// keepAlive writes a keep-alive every Fault.Delay until the client goes:
// an SSE comment, which every SSE reader skips, or in a JSON stream a
// newline between its elements.
func (x *exchange) keepAlive(contentType string, rc *http.ResponseController) {
	beat := []byte(": keep-alive\n\n")
	if contentType != "text/event-stream" {
		beat = []byte("\n")
	}
	for x.p.env.sleep(x.r.Context(), time.Duration(x.fault.Delay)) == nil {
		if _, err := x.w.Write(beat); err != nil {
			return
		}
		rc.Flush()
	}
}

// statusWriter remembers the status sent, for Stats.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// Unwrap lets http.ResponseController reach the connection's Flush.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
