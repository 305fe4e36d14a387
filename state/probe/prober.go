package probe

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/state/ledger"
	"github.com/switchyard/switchyard/state/store"
	"github.com/switchyard/switchyard/translator"
)

// Store is what the probes keep where replicas share it: window
// counters for each provider's slot and daily spend, and the board of
// verdicts. A [store.Store] is one.
type Store interface {
	AddWindows(ctx context.Context, group string, lines []store.WindowLine) (store.WindowResult, error)
	AdjustWindow(ctx context.Context, ref store.WindowRef, delta int64) (bool, error)
	store.SketchBoard
}

// Ledger takes a usage record for each probe sent (*ledger.Writer).
type Ledger interface{ Write(r ledger.Record) }

// Names in the store.
const (
	// windows is the window group of the slots and the spend.
	windows = "probe"
	// series is the board of verdicts; each provider's record is kept
	// under its name.
	series = "probes"
	// day is the spend window: windows are aligned to the Unix epoch, so
	// this one is the UTC day.
	day = 24 * time.Hour
)

// maxAnswer bounds what is read of a probe's answer: a few tokens.
const maxAnswer = 1 << 20

// RoutePrefix starts the route of a probe's ledger row ("probe:tools").
// No route of the policy can take such a name.
const RoutePrefix = "probe:"

// Options are a prober's collaborators.
type Options struct {
	// Policy returns the live policy.
	Policy func() *policy.Policy
	Store  Store
	// Translate returns the chat translator of one probe's target, the
	// one a real request to it gets; nil for a kind without one.
	Translate func(translator.Target) translator.Translator
	// Key returns the provider key a probe is sent with, "" for none.
	Key func(*policy.Provider) (string, error)
	// Ledger records every probe sent; nil records none.
	Ledger Ledger
	// Metrics registers the prober's counters; nil registers none.
	Metrics prometheus.Registerer
	Log     *slog.Logger
	// Now is the clock of the verdicts and the schedule (default
	// time.Now); the store keeps its own for the windows.
	Now func() time.Time
	// Client sends the probes (default: one that follows no redirect).
	Client *http.Client
}

// Prober runs the probes of every provider that asks for them, and keeps
// the board current with what every replica found.
type Prober struct {
	o       Options
	board   *Board
	metrics *metrics

	// share orders this replica's reads of the shared board and its
	// writes to it, so that a read begun before a write cannot undo it
	// on the board.
	share sync.Mutex

	mu      sync.Mutex
	running map[string]bool
	next    map[string]time.Time // provider → when its next slot opens

	// failing is set while the tick's exchanges with the store fail,
	// so that the first failure alone is logged. Only the tick uses it.
	failing bool
}

// New returns a prober that writes its verdicts to board.
func New(board *Board, o Options) *Prober {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Client == nil {
		// A probe follows no redirect: the answer of the endpoint itself
		// counts.
		o.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	return &Prober{o: o, board: board, metrics: newMetrics(o.Metrics), running: map[string]bool{}, next: map[string]time.Time{}}
}

// Run reads the shared board and starts the probes that are due, every
// tick, until ctx ends; it returns once the probes under way have ended.
func (p *Prober) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		p.tick(ctx, wg.Go)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// tick reads the shared board into this replica's, then starts, with
// start, the run of every provider whose slot this replica won.
func (p *Prober) tick(ctx context.Context, start func(func())) {
	pol := p.o.Policy()
	if !slices.ContainsFunc(pol.Providers, func(prov *policy.Provider) bool { return prov.Probes != nil }) {
		p.board.set(pol, nil) // nothing probed: no round trip to the store
		return
	}
	p.refresh(ctx, pol)
	for _, prov := range pol.Providers {
		if prov.Probes == nil || !p.claim(ctx, prov) {
			continue
		}
		start(func() {
			defer p.release(prov.Name)
			p.run(ctx, pol, prov)
		})
	}
}

// refresh replaces this replica's board with the shared one.
func (p *Prober) refresh(ctx context.Context, pol *policy.Policy) {
	p.share.Lock()
	defer p.share.Unlock()
	all, err := p.o.Store.Sketches(ctx, series)
	if p.storeFailed(ctx, "reading the probe verdicts", err) {
		return
	}
	recs := make([]Record, 0, len(all))
	for _, data := range all {
		var r Record
		if json.Unmarshal(data, &r) == nil {
			recs = append(recs, r)
		}
	}
	p.board.set(pol, recs)
}

// claim reports whether this replica is to probe prov now: no run of it
// is under way here, its next slot has opened, and this replica took it
// before any other.
func (p *Prober) claim(ctx context.Context, prov *policy.Provider) bool {
	now := p.o.Now()
	p.mu.Lock()
	if p.running[prov.Name] || now.Before(p.next[prov.Name]) {
		p.mu.Unlock()
		return false
	}
	p.running[prov.Name] = true
	p.mu.Unlock()
	// The interval is in the name, so that a slot of the interval before
	// a reload does not hold one of the new interval.
	iv := prov.Probes.Interval
	res, err := p.o.Store.AddWindows(ctx, windows, []store.WindowLine{{
		Name: "slot/" + prov.Name + "/" + strconv.FormatInt(iv.Milliseconds(), 10), Limit: 1, Size: iv, Amount: 1,
	}})
	failed := p.storeFailed(ctx, "taking a probe slot", err)
	p.mu.Lock()
	defer p.mu.Unlock()
	if failed {
		p.running[prov.Name] = false
		return false
	}
	p.next[prov.Name] = now.Add(res.Lines[0].ResetIn)
	p.running[prov.Name] = res.Allowed
	return res.Allowed
}

func (p *Prober) release(provider string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running[provider] = false
}

// storeFailed logs the first of a run of store failures, and reports
// whether err is one.
func (p *Prober) storeFailed(ctx context.Context, what string, err error) bool {
	if err == nil {
		p.failing = false
		return false
	}
	if !p.failing && ctx.Err() == nil {
		p.o.Log.Warn(what+" failed; no probe is sent while the store cannot hold the daily cap", slog.String("error", err.Error()))
	}
	p.failing = true
	return true
}

// run probes every probed model of prov for every capability it claims,
// one at a time, and shares the results. Once the daily cap refuses a
// probe the others are not sent either.
func (p *Prober) run(ctx context.Context, pol *policy.Policy, prov *policy.Provider) {
	prev := p.board.record(prov.Name)
	rec := Record{Provider: prov.Name, CapMicros: prov.Probes.DailyCapMicros}
	capped, n := false, 0
	for _, m := range prov.Probes.Models {
		mr := ModelResults{Model: m.Name}
		for _, c := range checks {
			if !m.Caps.Has(c.cap) {
				continue
			}
			o, detail := Capped, "not sent: the provider's probes reached their daily cap"
			if !capped {
				o, detail = p.probe(ctx, prov, m, c, &rec)
				capped = o == Capped
			}
			if ctx.Err() != nil {
				return // shutting down: a probe cut short says nothing
			}
			p.metrics.runs.WithLabelValues(prov.Name, c.name, o.String()).Inc()
			old := prev.result(m.Name, c.name)
			r := old.after(o, detail, p.o.Now())
			p.logChange(prov.Name, m.Name, old, r)
			mr.Capabilities = append(mr.Capabilities, r)
			n++
		}
		if len(mr.Capabilities) > 0 {
			rec.Models = append(rec.Models, mr)
		}
	}
	if rec.Day == "" {
		rec.Day, rec.SpentMicros = prev.Day, prev.SpentMicros
	}
	rec.Ran = p.o.Now()
	p.share.Lock()
	defer p.share.Unlock()
	data, err := json.Marshal(rec)
	if err == nil {
		// Kept through two missed intervals: the replica that took the
		// next slot may be gone before it wrote.
		ttl := 2*prov.Probes.Interval + time.Duration(n+1)*prov.Probes.Timeout
		err = p.o.Store.PutSketch(ctx, series, prov.Name, data, ttl)
	}
	if err != nil && ctx.Err() == nil {
		p.o.Log.Warn("sharing the probe verdicts failed", slog.String("provider", prov.Name), slog.String("error", err.Error()))
	}
	p.board.put(pol, rec)
}

// logChange logs a verdict that changed.
func (p *Prober) logChange(provider, model string, old, now Result) {
	if now.Verdict == old.Verdict || now.Verdict == Unknown {
		return
	}
	attrs := []any{slog.String("provider", provider), slog.String("model", model), slog.String("capability", now.Capability)}
	if now.Verdict == Failing {
		p.o.Log.Warn("capability probe failed: requests that need it skip the model", append(attrs, slog.String("detail", now.Detail))...)
		return
	}
	p.o.Log.Info("capability probe passed", attrs...)
}

// probe sends the probe of capability c to model m on prov, within the
// daily cap, and judges its answer. rec takes the provider's spend.
func (p *Prober) probe(ctx context.Context, prov *policy.Provider, m *policy.Model, c check, rec *Record) (Outcome, string) {
	body := c.body(m.Name, prov.Probes.MaxTokens)
	req, e := openaiapi.ParseChatRequest(body)
	if e != nil {
		return Inconclusive, "the probe does not parse: " + e.Message
	}
	key, err := p.o.Key(prov)
	if err != nil {
		return Inconclusive, "resolving the provider key failed"
	}
	start := p.o.Now()
	id := "probe-" + strings.ToLower(rand.Text())
	t := translator.Target{Provider: prov, Model: m, ClientModel: m.Name, Key: key, ID: id, Created: start.Unix()}
	tr := p.o.Translate(t)
	if tr == nil {
		return Inconclusive, "no translator for kind " + string(prov.Kind)
	}
	up, e := tr.Request(req, body)
	if e != nil {
		// A real request would be refused the same way, before any
		// provider saw it.
		return Failed, "the gateway refuses it for this provider: " + clip(e.Message)
	}
	ceiling := m.Price.Ceiling(openaiapi.EstimatePromptTokens(req), t.OutputLimit(req.OutputCap()))
	res, err := p.o.Store.AddWindows(ctx, windows, []store.WindowLine{{
		Name: "spend/" + prov.Name, Limit: prov.Probes.DailyCapMicros, Size: day, Amount: ceiling,
	}})
	if err != nil {
		return Inconclusive, "not sent: the store cannot hold the daily cap"
	}
	spent := res.Lines[0]
	rec.Day, rec.SpentMicros = spent.Ref.Start.Format(time.DateOnly), spent.Used
	if !res.Allowed {
		return Capped, "not sent: " + strconv.FormatInt(spent.Used, 10) + " of the daily cap's " +
			strconv.FormatInt(prov.Probes.DailyCapMicros, 10) + " micro-USD spent, this probe may cost " + strconv.FormatInt(ceiling, 10)
	}
	a, sent, err := p.send(ctx, prov, up, tr)
	u, known := tr.Usage()
	a.usage = known
	cost := ceiling // the provider's count never came: the worst case
	switch {
	case known:
		cost = m.Price.Micros(policy.Tokens{Prompt: u.PromptTokens, Completion: u.CompletionTokens, CacheRead: u.Cached()})
	case !sent:
		cost = 0
	}
	if cost != ceiling {
		if _, err := p.o.Store.AdjustWindow(context.WithoutCancel(ctx), spent.Ref, cost-ceiling); err == nil {
			rec.SpentMicros += cost - ceiling
		}
	}
	p.metrics.cost.WithLabelValues(prov.Name).Add(float64(cost))
	if sent {
		p.record(id, start, prov, m, c, a, u, known, cost)
	}
	if err != nil {
		return Inconclusive, "no answer: " + err.Error()
	}
	return judge(c.cap, a)
}

// send makes one probe's call and translates its answer. sent is false
// when no connection was made, so the provider cannot have billed it.
// Errors hold no URL: one could carry a query the operator set.
func (p *Prober) send(ctx context.Context, prov *policy.Provider, up translator.Upstream, tr translator.Translator) (a answer, sent bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, prov.Probes.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, prov.Scheme+"://"+prov.Authority()+up.Path, bytes.NewReader(up.Body))
	if err != nil {
		return a, false, errors.New("building the request failed")
	}
	for _, h := range up.Header {
		req.Header.Set(h.Key, h.Value)
	}
	resp, err := p.o.Client.Do(req)
	if err != nil {
		var op *net.OpError
		dial := errors.As(err, &op) && op.Op == "dial"
		if ctx.Err() != nil {
			return a, true, errors.New("timeout")
		}
		return a, !dial, errors.New(withoutURL(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return a, true, errors.New("reading the answer: " + withoutURL(err))
	}
	var h translator.Headers
	for k, vs := range resp.Header {
		for _, v := range vs {
			h = append(h, translator.Header{Key: strings.ToLower(k), Value: v})
		}
	}
	if tr.IsStream(resp.StatusCode, h) {
		return answer{status: resp.StatusCode, body: tr.StreamChunk(body, true), stream: true}, true, nil
	}
	r := tr.Complete(resp.StatusCode, h, body)
	return answer{status: r.Status, body: r.Body}, true, nil
}

// withoutURL is an error's text without the URL net/http wraps it in.
func withoutURL(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// record writes the ledger row of a probe sent: no tenant, the route
// named after the capability, its cost.
func (p *Prober) record(id string, start time.Time, prov *policy.Provider, m *policy.Model, c check, a answer, u openaiapi.Usage, known bool, cost int64) {
	if p.o.Ledger == nil {
		return
	}
	r := ledger.Record{
		RequestID: id, Time: start, Route: RoutePrefix + c.name,
		RequestedModel: m.Name, ServedModel: m.Name, Provider: prov.Name, Stream: c.cap == policy.CapStream, Attempts: 1,
		InputTokens: int64(u.PromptTokens), OutputTokens: int64(u.CompletionTokens), CachedTokens: int64(u.Cached()),
		CostMicros: cost, Latency: p.o.Now().Sub(start), Status: a.status, UsageEstimated: !known,
		PriceSource: string(m.PriceSource),
	}
	switch {
	case a.status == 0:
		r.ErrorType = "no_answer"
	case a.status != http.StatusOK:
		r.ErrorType = "refused"
	}
	p.o.Ledger.Write(r)
}
