package probe

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/providersim"
	"github.com/switchyard/switchyard/state/ledger"
	"github.com/switchyard/switchyard/state/store"
	"github.com/switchyard/switchyard/translator"
	"github.com/switchyard/switchyard/translator/anthropic"
	"github.com/switchyard/switchyard/translator/gemini"
	"github.com/switchyard/switchyard/translator/openai"
)

// clock is a time the test moves.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// rows keeps the ledger records written.
type rows struct {
	mu  sync.Mutex
	got []ledger.Record
}

func (r *rows) Write(rec ledger.Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, rec)
}

func (r *rows) all() []ledger.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ledger.Record(nil), r.got...)
}

const simKey = "sk-sim-probe"

// fixture is one simulated OpenAI provider serving gpt and a Gemini one
// serving flash (both claim every capability probed), and an Anthropic
// one serving claude (tools only), all probed, on one store.
type fixture struct {
	sim   *providersim.Sim
	pol   *policy.Policy
	store *store.Memory
	clock *clock
}

func newFixture(t *testing.T, probes string) *fixture {
	t.Helper()
	sim, err := providersim.Start(t.Context(), providersim.Config{Providers: []providersim.ProviderConfig{
		{Name: "openai", Kind: providersim.KindOpenAI, ExpectKey: simKey},
		{Name: "anthropic", Kind: providersim.KindAnthropic, ExpectKey: simKey},
		{Name: "gemini", Kind: providersim.KindGemini, ExpectKey: simKey},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	y := fmt.Sprintf(`providers:
  - {name: openai, kind: openai, base_url: %q, api_key: {env: PROBE_TEST_KEY}, probes: %s}
  - {name: anthropic, kind: anthropic, base_url: %q, api_key: {env: PROBE_TEST_KEY}, probes: %s}
  - {name: gemini, kind: gemini, base_url: %q, api_key: {env: PROBE_TEST_KEY}, probes: %s}
models:
  - {name: gpt, provider: openai, context_window: 8000, max_output_tokens: 1000, capabilities: [chat, tools, vision, json, stream], price_usd_per_mtok: {input: 1, output: 2}}
  - {name: claude, provider: anthropic, context_window: 8000, max_output_tokens: 1000, capabilities: [chat, tools], price_usd_per_mtok: {input: 3, output: 15}}
  - {name: flash, provider: gemini, context_window: 8000, max_output_tokens: 1000, capabilities: [chat, tools, vision, json, stream], price_usd_per_mtok: {input: 0.1, output: 0.4}}
`, sim.URL("openai"), probes, sim.URL("anthropic"), probes, sim.URL("gemini"), probes)
	pol, err := policy.Compile([]policy.File{{Name: "policy.yaml", Data: []byte(y)}})
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)}
	return &fixture{sim: sim, pol: pol, store: store.NewMemory(store.Options{Clock: c}), clock: c}
}

// prober is a replica's prober of the fixture, with its board, ledger
// and metrics.
func (f *fixture) prober(t *testing.T) (*Prober, *Board, *rows, *prometheus.Registry) {
	t.Helper()
	board, led, reg := NewBoard(), &rows{}, prometheus.NewRegistry()
	p := New(board, Options{
		Policy: func() *policy.Policy { return f.pol },
		Store:  f.store,
		Translate: func(tg translator.Target) translator.Translator {
			switch tg.Provider.Kind {
			case policy.KindAnthropic:
				return anthropic.New(tg)
			case policy.KindGemini:
				return gemini.New(tg)
			}
			return openai.New(tg)
		},
		Key:     func(*policy.Provider) (string, error) { return simKey, nil },
		Ledger:  led,
		Metrics: reg,
		Now:     f.clock.Now,
	})
	return p, board, led, reg
}

// tick runs one tick of p to its end.
func tick(p *Prober) { p.tick(context.Background(), func(run func()) { run() }) }

// verdicts are a board's verdicts, "provider/model/capability" → verdict.
func verdicts(b *Board) map[string]Verdict {
	out := map[string]Verdict{}
	for _, r := range b.Snapshot() {
		for _, m := range r.Models {
			for _, c := range m.Capabilities {
				out[r.Provider+"/"+m.Model+"/"+c.Capability] = c.Verdict
			}
		}
	}
	return out
}

// TestProbeVerdicts: each capability a provider's models lack is found
// failing, the others passing, through the real translators and wire
// formats; once the capability returns, the next interval finds it
// passing again.
func TestProbeVerdicts(t *testing.T) {
	allPass := map[string]Verdict{
		"anthropic/claude/tools": Passing,
		"openai/gpt/tools":       Passing, "openai/gpt/vision": Passing, "openai/gpt/json": Passing, "openai/gpt/stream": Passing,
		"gemini/flash/tools": Passing, "gemini/flash/vision": Passing, "gemini/flash/json": Passing, "gemini/flash/stream": Passing,
	}
	tests := []struct {
		name        string
		provider    string
		lacks       string
		want        map[string]Verdict
		wantFailing policy.Capability // of the lacking provider's model
	}{
		{name: "nothing lacking", want: allPass},
		{name: "openai without tools", provider: "openai", lacks: providersim.LackTools, wantFailing: policy.CapTools},
		{name: "openai without vision", provider: "openai", lacks: providersim.LackVision, wantFailing: policy.CapVision},
		{name: "openai without JSON mode", provider: "openai", lacks: providersim.LackJSON, wantFailing: policy.CapJSON},
		{name: "openai streams without usage", provider: "openai", lacks: providersim.LackStreamUsage, wantFailing: policy.CapStream},
		{name: "anthropic without tools", provider: "anthropic", lacks: providersim.LackTools, wantFailing: policy.CapTools},
		{name: "gemini without vision", provider: "gemini", lacks: providersim.LackVision, wantFailing: policy.CapVision},
		{name: "gemini without JSON mode", provider: "gemini", lacks: providersim.LackJSON, wantFailing: policy.CapJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, "{interval: 1m, timeout: 5s, daily_cap_usd: 1}")
			p, board, _, reg := f.prober(t)
			want := tt.want
			model := map[string]string{"openai": "gpt", "anthropic": "claude", "gemini": "flash"}[tt.provider]
			if tt.lacks != "" {
				if err := f.sim.SetFault(tt.provider, providersim.Fault{Mode: providersim.FaultLacks, Capability: tt.lacks}); err != nil {
					t.Fatal(err)
				}
				want = map[string]Verdict{}
				for k, v := range allPass {
					want[k] = v
				}
				name := map[string]string{providersim.LackStreamUsage: "stream"}[tt.lacks]
				if name == "" {
					name = tt.lacks
				}
				want[tt.provider+"/"+model+"/"+name] = Failing
			}
			tick(p)
			if diff := cmp.Diff(want, verdicts(board)); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
			if tt.lacks == "" {
				return
			}
			if got := board.Failing(tt.provider, model); got != tt.wantFailing {
				t.Errorf("failing %b, want %b", got, tt.wantFailing)
			}
			failing := fmt.Sprintf(`switchyard_probe_failing{capability=%q,model=%q,provider=%q} 1`, capOfName(tt.wantFailing), model, tt.provider)
			if out := gather(t, reg, board); !strings.Contains(out, failing) {
				t.Errorf("metrics lack %s:\n%s", failing, out)
			}

			// The capability returns; the next interval passes it.
			if err := f.sim.ClearFault(tt.provider); err != nil {
				t.Fatal(err)
			}
			tick(p)
			if got := board.Failing(tt.provider, model); got != tt.wantFailing {
				t.Errorf("before the next interval, failing %b, want %b still", got, tt.wantFailing)
			}
			f.clock.advance(time.Minute)
			tick(p)
			if diff := cmp.Diff(allPass, verdicts(board)); diff != "" {
				t.Errorf("verdicts once it returned (-want +got):\n%s", diff)
			}
			if got := board.Failing(tt.provider, model); got != 0 {
				t.Errorf("failing %b once it returned, want none", got)
			}
		})
	}
}

func capOfName(c policy.Capability) string {
	for _, ch := range checks {
		if ch.cap == c {
			return ch.name
		}
	}
	return ""
}

// gather is the text exposition of the prober's metrics and the board's.
func gather(t *testing.T, reg *prometheus.Registry, b *Board) string {
	t.Helper()
	if err := reg.Register(b.Collector()); err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister(b.Collector())
	var out strings.Builder
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			fmt.Fprintf(&out, "%s{%s} %g\n", mf.GetName(), strings.Join(labels, ","), v)
		}
	}
	return out.String()
}

// TestInconclusiveKeepsTheVerdict: a probe that says nothing of the
// capability (the provider overloaded) leaves a failing verdict failing.
func TestInconclusiveKeepsTheVerdict(t *testing.T) {
	f := newFixture(t, "{interval: 1m, timeout: 5s, daily_cap_usd: 1}")
	p, board, _, _ := f.prober(t)
	if err := f.sim.SetFault("anthropic", providersim.Fault{Mode: providersim.FaultLacks, Capability: providersim.LackTools}); err != nil {
		t.Fatal(err)
	}
	tick(p)
	if err := f.sim.SetFault("anthropic", providersim.Fault{Mode: providersim.FaultStatus, Status: 529}); err != nil {
		t.Fatal(err)
	}
	f.clock.advance(time.Minute)
	tick(p)
	r := board.record("anthropic").result("claude", "tools")
	// The translator gives Anthropic's 529 as OpenAI's 503.
	if r.Verdict != Failing || r.Last != "inconclusive" || !strings.Contains(r.Detail, "status 503") {
		t.Errorf("got %+v, want still failing, last inconclusive with status 503", r)
	}
	if board.Failing("anthropic", "claude") != policy.CapTools {
		t.Error("tools no longer failing after an inconclusive probe")
	}
}

// TestDailyCap: the probes of a provider stop at its daily cap, their
// spend recorded in the ledger matches the store's counter and never
// passes the cap, and a new UTC day sends them again.
func TestDailyCap(t *testing.T) {
	// gpt's tools probe may cost 77 micro-USD (45 prompt tokens at 1 USD
	// per million, 16 output at 2), its vision probe 132: a cap of 100
	// lets the first through, and the probes after it wait for the next
	// day. claude's first probe (375) does not fit at all; flash's all do.
	f := newFixture(t, "{interval: 1m, timeout: 5s, daily_cap_usd: 0.0001}")
	p, board, led, reg := f.prober(t)
	tick(p)
	st, err := f.sim.Stats("openai")
	if err != nil {
		t.Fatal(err)
	}
	openaiSpent := func() int64 {
		var n int64
		for _, r := range led.all() {
			if r.Provider == "openai" {
				n += r.CostMicros
				if r.Tenant != "" || !strings.HasPrefix(r.Route, RoutePrefix) || r.CostMicros <= 0 {
					t.Errorf("ledger row %+v: want no tenant, a probe route and a cost", r)
				}
			}
		}
		return n
	}
	spent := openaiSpent()
	rec := board.record("openai")
	if rec.SpentMicros != spent || spent > rec.CapMicros || rec.CapMicros != 100 || rec.Day != "2026-12-05" {
		t.Errorf("record spent %d of %d on %s (ledger %d), want the ledger's spend within 100 on 2026-12-05", rec.SpentMicros, rec.CapMicros, rec.Day, spent)
	}
	if st.Requests != 1 {
		t.Errorf("openai got %d probes, want 1 within the cap", st.Requests)
	}
	if st, _ := f.sim.Stats("anthropic"); st.Requests != 0 {
		t.Errorf("anthropic got %d probes, want none: the first does not fit the cap", st.Requests)
	}
	last := map[string]string{}
	for _, c := range rec.Models[0].Capabilities {
		last[c.Capability] = c.Last
	}
	if diff := cmp.Diff(map[string]string{"tools": "passed", "vision": "capped", "json": "capped", "stream": "capped"}, last); diff != "" {
		t.Errorf("last outcomes (-want +got):\n%s", diff)
	}
	if out := gather(t, reg, board); !strings.Contains(out, `switchyard_probe_runs_total{capability="json",outcome="capped",provider="openai"} 1`) ||
		!strings.Contains(out, fmt.Sprintf(`switchyard_probe_cost_micro_usd_total{provider="openai"} %d`, spent)) {
		t.Errorf("metrics lack the capped probe or the cost:\n%s", out)
	}

	// Later intervals send the tools probe while what is left of the
	// cap covers its worst case, then none.
	sent := func() int {
		st, _ := f.sim.Stats("openai")
		return st.Requests
	}
	for range 5 {
		f.clock.advance(time.Minute)
		tick(p)
	}
	held := sent()
	f.clock.advance(time.Minute)
	tick(p)
	if got := sent(); got != held || held < 2 {
		t.Errorf("probes sent %d, then %d, want some more after the first and then none", held, got)
	}
	spent = openaiSpent()
	if rec := board.record("openai"); spent > 100 || rec.SpentMicros != spent {
		t.Errorf("spent %d (record %d), want the ledger's spend, at most the cap of 100", spent, rec.SpentMicros)
	}
	f.clock.advance(14 * time.Hour) // past midnight UTC
	tick(p)
	if got := sent(); got != held+1 {
		t.Errorf("a new day sent %d probes, want 1", got-held)
	}
}

// TestReplicasShare: two replicas on one store probe a provider once per
// interval between them, and both route by the same verdicts.
func TestReplicasShare(t *testing.T) {
	f := newFixture(t, "{interval: 1m, timeout: 5s, daily_cap_usd: 1}")
	a, boardA, _, _ := f.prober(t)
	b, boardB, _, _ := f.prober(t)
	if err := f.sim.SetFault("openai", providersim.Fault{Mode: providersim.FaultLacks, Capability: providersim.LackJSON}); err != nil {
		t.Fatal(err)
	}
	tick(a)
	tick(b)
	if st, _ := f.sim.Stats("openai"); st.Requests != 4 {
		t.Errorf("openai got %d probes, want 4 (one replica's)", st.Requests)
	}
	for name, board := range map[string]*Board{"a": boardA, "b": boardB} {
		if got := board.Failing("openai", "gpt"); got != policy.CapJSON {
			t.Errorf("replica %s: failing %b, want json", name, got)
		}
	}
	// The next interval is probed by whichever replica ticks first.
	f.clock.advance(time.Minute)
	if err := f.sim.ClearFault("openai"); err != nil {
		t.Fatal(err)
	}
	tick(b)
	tick(a)
	if st, _ := f.sim.Stats("openai"); st.Requests != 8 {
		t.Errorf("openai got %d probes, want 8", st.Requests)
	}
	for name, board := range map[string]*Board{"a": boardA, "b": boardB} {
		if got := board.Failing("openai", "gpt"); got != 0 {
			t.Errorf("replica %s: failing %b, want none", name, got)
		}
	}
}

// TestProbeSendsTheProviderKey: probes carry the provider's key as its
// kind wants it, as real requests do.
func TestProbeSendsTheProviderKey(t *testing.T) {
	f := newFixture(t, "{interval: 1m, timeout: 5s, daily_cap_usd: 1}")
	p, _, _, _ := f.prober(t)
	tick(p)
	for provider, header := range map[string]string{"openai": "Authorization", "anthropic": "X-Api-Key"} {
		st, _ := f.sim.Stats(provider)
		if len(st.Recent) == 0 {
			t.Fatalf("%s got no probe", provider)
		}
		for _, r := range st.Recent {
			if got := r.Header.Get(header); !strings.Contains(got, simKey) {
				t.Errorf("%s probe %s: %s %q, want the provider key", provider, r.Path, header, got)
			}
		}
		if st.ByStatus[200] != st.Requests {
			t.Errorf("%s answered %v, want every probe 200", provider, st.ByStatus)
		}
	}
}

// reads counts a store's reads of the shared board.
type reads struct {
	Store
	n int
}

func (r *reads) Sketches(ctx context.Context, series string) (map[string][]byte, error) {
	r.n++
	return r.Store.Sketches(ctx, series)
}

// TestNothingProbedCostsNoRoundTrip: a policy without probes leaves the
// store alone, and the board empty.
func TestNothingProbedCostsNoRoundTrip(t *testing.T) {
	pol, err := policy.Compile([]policy.File{{Name: "policy.yaml", Data: []byte(`providers:
  - {name: openai, kind: openai, base_url: "http://127.0.0.1:9101"}
models:
  - {name: gpt, provider: openai, context_window: 8000, max_output_tokens: 1000, capabilities: [chat, tools], price_usd_per_mtok: {input: 1, output: 2}}
`)}})
	if err != nil {
		t.Fatal(err)
	}
	st := &reads{Store: store.NewMemory(store.Options{})}
	board := NewBoard()
	p := New(board, Options{Policy: func() *policy.Policy { return pol }, Store: st})
	tick(p)
	if st.n != 0 || len(board.Snapshot()) != 0 {
		t.Errorf("%d reads of the store, board %+v; want none and an empty board", st.n, board.Snapshot())
	}
}
