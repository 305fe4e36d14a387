package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/e2e/harness"
	"github.com/switchyard/switchyard/filters/quota/quotaspec"
	"github.com/switchyard/switchyard/providersim"
	"github.com/switchyard/switchyard/stack"
	"github.com/switchyard/switchyard/state/ledger"
	"github.com/switchyard/switchyard/state/ledger/pgtest"
	"github.com/switchyard/switchyard/state/store"
)

// load sends chat requests from a few workers until stop is closed, each
// at most every interval, and keeps what each client saw.
type load struct {
	mu      sync.Mutex
	seen    []outcome
	stop    chan struct{}
	stopped sync.WaitGroup
}

type outcome struct {
	at     time.Time
	status int    // 0: no HTTP answer (a transport error)
	id     string // the X-Request-Id answered
}

func startLoad(url string, workers int, interval time.Duration) *load {
	l := &load{stop: make(chan struct{})}
	c := &http.Client{Timeout: 10 * time.Second}
	body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"chaos"}]}`
	for range workers {
		l.stopped.Add(1)
		go func() {
			defer l.stopped.Done()
			t := time.NewTicker(interval)
			defer t.Stop()
			for {
				select {
				case <-l.stop:
					return
				case <-t.C:
				}
				req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+demoKey)
				req.Header.Set("Content-Type", "application/json")
				o := outcome{at: time.Now()}
				if resp, err := c.Do(req); err == nil {
					o.status = resp.StatusCode
					o.id = resp.Header.Get("X-Request-Id")
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				l.mu.Lock()
				l.seen = append(l.seen, o)
				l.mu.Unlock()
			}
		}()
	}
	return l
}

func (l *load) end() []outcome {
	close(l.stop)
	l.stopped.Wait()
	return l.seen
}

// firstServedAfter is when the first request sent after t was served.
func firstServedAfter(seen []outcome, t time.Time) (time.Time, bool) {
	var first time.Time
	for _, o := range seen {
		if o.at.After(t) && o.status == http.StatusOK && (first.IsZero() || o.at.Before(first)) {
			first = o.at
		}
	}
	return first, !first.IsZero()
}

// TestChaosExtProcKilled: ext_proc dies (kill -9) under load and is
// restarted. Clients see 200 or a clean 503, never a dropped connection
// or an unprocessed request; new requests are served again within 15 s of
// the restart, and every request after that is served. No usage record is
// lost: every request a client saw served has its row in the ledger (the
// dead process's unwritten records come back from its disk spool), and the
// ledger holds no more served rows than clients saw. The budget holds the
// dead process left in Redis are indexed for the sweep, due within
// reservation_ttl of the kill.
func TestChaosExtProcKilled(t *testing.T) {
	s := startStack(t, defaultOptions())
	l := startLoad(s.URL, 4, 20*time.Millisecond)
	time.Sleep(2 * time.Second)
	killed := time.Now()
	s.Kill("extproc-0")
	time.Sleep(2 * time.Second)
	restarted := time.Now()
	if err := s.Restart("extproc-0"); err != nil {
		l.end()
		t.Fatal(err)
	}
	deadline := restarted.Add(15 * time.Second)
	for time.Now().Before(deadline) {
		l.mu.Lock()
		_, ok := firstServedAfter(l.seen, restarted)
		l.mu.Unlock()
		if ok {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	back, _ := firstServedAfter(l.seen, restarted)
	time.Sleep(2 * time.Second)
	seen := l.end()

	byStatus := map[int]int{}
	for _, o := range seen {
		byStatus[o.status]++
	}
	t.Logf("clients saw %v; served again %v after the restart", byStatus, back.Sub(restarted).Round(time.Millisecond))
	for st, n := range byStatus {
		if st != http.StatusOK && st != http.StatusServiceUnavailable {
			t.Errorf("%d requests got %d, want only 200 or 503", n, st)
		}
	}
	if byStatus[http.StatusServiceUnavailable] == 0 {
		t.Error("no request failed while ext_proc was down: the kill proves nothing")
	}
	if back.IsZero() {
		t.Fatal("no request was served within 15 s of the restart")
	}
	settled := back.Add(time.Second)
	for _, o := range seen {
		if o.at.After(settled) && o.status != http.StatusOK {
			t.Errorf("a request sent %v after service came back got %d", o.at.Sub(back).Round(time.Millisecond), o.status)
		}
	}

	rows := ledgerRecords(t, s)
	lost, servedRows := 0, 0
	for _, o := range seen {
		if o.status == http.StatusOK {
			if _, ok := rows[o.id]; !ok || o.id == "" {
				lost++
			}
		}
	}
	for _, r := range rows {
		if r.Status == http.StatusOK {
			servedRows++
		}
	}
	t.Logf("served %d, served rows in the ledger %d, usage records lost %d", byStatus[http.StatusOK], servedRows, lost)
	if lost > 0 {
		t.Errorf("%d served requests have no usage record", lost)
	}
	if servedRows != byStatus[http.StatusOK] {
		t.Errorf("ledger holds %d served rows, clients saw %d served", servedRows, byStatus[http.StatusOK])
	}
	assertHoldsExpire(t, s, "demo", killed, quotaspec.Default().ReservationTTL)
}

// assertHoldsExpire checks what budget holds a process killed at killed
// left in Redis for tenant: the reservations made before the kill (its
// requests in flight and its budget leases) are indexed for expiry, due
// within ttl of the kill, and the tenant is on the list the sweep walks,
// so the sweep gives them back (the sweep itself: TestSweep, and the store
// conformance suite on Redis). The restarted process's own leases are
// live and not counted.
func assertHoldsExpire(t *testing.T, s *stack.Stack, tenant string, killed time.Time, ttl time.Duration) {
	t.Helper()
	rc := redis.NewClient(&redis.Options{Addr: s.RedisAddr})
	defer rc.Close()
	live, err := rc.ZRangeWithScores(t.Context(), "sy:{ten:"+tenant+"}:rexp", 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	dead := 0
	for _, z := range live {
		exp := time.UnixMicro(int64(z.Score))
		if exp.Add(-ttl).Before(killed) {
			dead++
		}
	}
	t.Logf("reservations live after the restart: %d, of which %d made before the kill (due by %v)", len(live), dead, killed.Add(ttl).Format(time.TimeOnly))
	if dead == 0 {
		return
	}
	listed, err := rc.SIsMember(t.Context(), "sy:tenants", tenant).Result()
	if err != nil {
		t.Fatal(err)
	}
	if !listed {
		t.Errorf("tenant %s holds %d reservations of the dead process but is not on the sweep's list", tenant, dead)
	}
}

// TestChaosXDSDown: with the control plane gone Envoy keeps serving its
// last configuration; back, it serves on.
func TestChaosXDSDown(t *testing.T) {
	s := startStack(t, defaultOptions())
	s.Kill("xds")
	for i := range 20 {
		if m, err := served(t, s, "gpt-4o-mini", ""); err != nil || m != "gpt-4o-mini" {
			t.Fatalf("request %d with xds down: served by %q (%v)", i, m, err)
		}
	}
	if err := s.Restart("xds"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	for i := range 20 {
		if m, err := served(t, s, "gpt-4o-mini", ""); err != nil || m != "gpt-4o-mini" {
			t.Fatalf("request %d with xds back: served by %q (%v)", i, m, err)
		}
	}
}

// TestChaosProviderAnswersBadly: a provider that answers 200 with a body
// that is not a chat completion (truncated JSON, an error object, HTML
// under the wrong content type). Whatever the gateway does (fail over or
// refuse), the client gets a chat completion or an OpenAI error envelope,
// never the provider's garbage; with the fault cleared it is served again.
func TestChaosProviderAnswersBadly(t *testing.T) {
	s := startStack(t, defaultOptions())
	tests := []struct {
		name  string
		fault providersim.Fault
	}{
		{"truncated JSON", providersim.Fault{Mode: providersim.FaultMalformed, Body: `{"id":"c","object":"chat.completion","choices":[{"index":0,"mess`}},
		{"200 with an error body", providersim.Fault{Mode: providersim.FaultStatus, Status: 200, Body: `{"error":{"message":"overloaded","type":"server_error"}}`}},
		{"wrong content type", providersim.Fault{Mode: providersim.FaultStatus, Status: 200, Body: "<html>busy</html>", Headers: map[string]string{"content-type": "text/html"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.Sim.SetFault("openai", tt.fault); err != nil {
				t.Fatal(err)
			}
			status, body := rawChat(t, s.URL, "gpt-4o-mini")
			_ = s.Sim.ClearFault("openai")
			var got struct {
				Choices []json.RawMessage `json:"choices"`
				Error   *struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("status %d, body not JSON: %q", status, body)
			}
			switch {
			case status == http.StatusOK && len(got.Choices) > 0:
			case status >= 400 && got.Error != nil && got.Error.Message != "":
			default:
				t.Errorf("status %d with %s: neither a completion nor an OpenAI error", status, body)
			}
			t.Logf("client saw %d %s", status, truncate(string(body), 160))
			if m, err := served(t, s, "gpt-4o-mini", ""); err != nil || m != "gpt-4o-mini" {
				t.Errorf("after the fault: served by %q (%v)", m, err)
			}
		})
	}
}

func rawChat(t *testing.T, url, model string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(`{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+demoKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestChaosLedgerDown: the ledger is PostgreSQL, down when ext_proc
// starts and again in mid-run. ext_proc starts and serves throughout;
// the usage records are kept (in memory and the spool) and written when
// the server comes back: every served request has its row, none lost.
func TestChaosLedgerDown(t *testing.T) {
	tmpl, err := pgtest.InitTemplate()
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmpl)
	pg, err := pgtest.NewCluster(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(pg.Dir)
	defer func() { _ = pg.Stop() }()
	s := startStack(t, stack.Options{
		Overlay: map[string]string{"gateway.yaml": localGateway(t) + "  ledger:\n    driver: postgres\n    dsn: {env: E2E_LEDGER_DSN}\n"},
		Env:     []string{"E2E_LEDGER_DSN=" + pg.DSN("postgres")},
	})

	serve := func(n int) []string {
		var ids []string
		for range n {
			req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/chat/completions",
				strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"ledger down"}]}`))
			req.Header.Set("Authorization", "Bearer "+demoKey)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("request with the ledger down: %d", resp.StatusCode)
			}
			ids = append(ids, resp.Header.Get("X-Request-Id"))
		}
		return ids
	}
	recorded := func(ids []string) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			missing := missingRows(t, pg.DSN("postgres"), ids)
			if missing == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d served requests still have no row a minute after PostgreSQL came back", missing, len(ids))
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	ids := serve(20) // PostgreSQL has never been up
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	came := time.Now()
	recorded(ids)
	t.Logf("down at start: 20 served, all recorded %v after PostgreSQL started", time.Since(came).Round(time.Millisecond))

	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	failedWrites := func() float64 {
		v, err := harness.MetricSum(s.Replicas[0].ExtProcMetrics+"/metrics", "switchyard_ledger_write_errors_total", `kind="unavailable"`)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := failedWrites()
	ids = append(ids, serve(20)...) // down in mid-run
	for deadline := time.Now().Add(30 * time.Second); failedWrites() == before; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the writer never found the ledger down: the outage proves nothing")
		}
	}
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	came = time.Now()
	recorded(ids)
	t.Logf("down in mid-run: 20 more served, all recorded %v after PostgreSQL came back", time.Since(came).Round(time.Millisecond))
}

// missingRows counts the request IDs without a row in the PostgreSQL
// ledger at dsn (not yet migrated counts as all missing).
func missingRows(t *testing.T, dsn string, ids []string) int {
	t.Helper()
	db, err := ledger.OpenPostgres(t.Context(), dsn)
	if err != nil {
		return len(ids)
	}
	defer db.Close()
	have := map[string]bool{}
	for r, err := range db.Records(t.Context(), ledger.Filter{}) {
		if err != nil {
			return len(ids)
		}
		have[r.RequestID] = true
	}
	n := 0
	for _, id := range ids {
		if !have[id] {
			n++
		}
	}
	return n
}

// outageTenants: one tenant whose limits fail open and one whose limits
// fail closed when the store is unreachable.
const outageTenants = `
tenants:
  - name: demo
    keys:
      - {name: demo-key, sha256: 4ff444b1a79536cc47732956cf5bc6256abf64bc1b8adff6843fac08bbb6be9f}
  - name: lenient
    budget_usd: {daily: 100, on_store_outage: open}
    rate_limit: {replenish_rate: 1000, burst_capacity: 2000, requests_per_minute: 100000, on_store_outage: open}
    keys:
      - {name: lenient-key, sha256: %s}
  - name: strict
    budget_usd: {daily: 100, on_store_outage: closed}
    rate_limit: {replenish_rate: 1000, burst_capacity: 2000, requests_per_minute: 100000, on_store_outage: closed}
    keys:
      - {name: strict-key, sha256: %s}
`

// TestChaosRedisOutage: Redis black-holed (SIGSTOP: connections accepted,
// nothing answered) and Redis restarted (killed, back empty) under
// traffic. While it is away every limit obeys its on_store_outage within
// the store timeout (1 s): the tenant whose limits fail open is served,
// the one whose limits fail closed gets 503 quota_unavailable once the
// leases it held (at most a second's) are spent, and no answer waits for
// go-redis's own timeouts. Once Redis is back both are served.
func TestChaosRedisOutage(t *testing.T) {
	const lenientKey, strictKey = "sk-e2e-lenient", "sk-e2e-strict"
	s := startStack(t, stack.Options{Overlay: map[string]string{
		"tenants.yaml": fmt.Sprintf(outageTenants, store.HashKey(lenientKey), store.HashKey(strictKey)),
	}})
	type answer struct {
		status int
		code   string
		took   time.Duration
	}
	ask := func(key string) answer {
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/chat/completions",
			strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"outage"}]}`))
		req.Header.Set("Authorization", "Bearer "+key)
		start := time.Now()
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		defer resp.Body.Close()
		var body struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		b, _ := io.ReadAll(resp.Body)
		_ = json.Unmarshal(b, &body)
		return answer{status: resp.StatusCode, code: body.Error.Code, took: time.Since(start)}
	}
	servedAgain := func(what string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for _, key := range []string{lenientKey, strictKey} {
			for a := ask(key); a.status != http.StatusOK; a = ask(key) {
				if time.Now().After(deadline) {
					t.Fatalf("%s: still %d %s 20 s after Redis came back", what, a.status, a.code)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
	// An answer waits for at most two store calls in sequence, each cut at
	// the 1 s store timeout (about 2 s in all); bound leaves room for a
	// loaded machine and stays below what go-redis's own timeouts cost
	// before the context deadline was honoured (3 s a read, 5 s a dial,
	// each call retried).
	const bound = 4 * time.Second
	faults := []struct {
		name       string
		start, end func() error
	}{
		{"black-holed",
			func() error { return syscall.Kill(s.PID("redis"), syscall.SIGSTOP) },
			func() error { return syscall.Kill(s.PID("redis"), syscall.SIGCONT) }},
		{"restarted",
			func() error { s.Kill("redis"); return nil },
			func() error { return s.Restart("redis") }},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			servedAgain("before the fault")
			if err := f.start(); err != nil {
				t.Fatal(err)
			}
			seen := map[string]map[string]int{lenientKey: {}, strictKey: {}}
			var slowest time.Duration
			for end := time.Now().Add(4 * time.Second); time.Now().Before(end); {
				for _, key := range []string{lenientKey, strictKey} {
					a := ask(key)
					seen[key][fmt.Sprint(a.status, " ", a.code)]++
					slowest = max(slowest, a.took)
					switch {
					case key == lenientKey && a.status != http.StatusOK:
						t.Errorf("fail-open tenant got %d %s", a.status, a.code)
					case key == strictKey && a.status != http.StatusOK && (a.status != http.StatusServiceUnavailable || a.code != "quota_unavailable"):
						t.Errorf("fail-closed tenant got %d %s, want 200 (a lease) or 503 quota_unavailable", a.status, a.code)
					}
					if a.took > bound {
						t.Errorf("an answer took %v with Redis away, want at most %v", a.took.Round(time.Millisecond), bound)
					}
				}
			}
			if err := f.end(); err != nil {
				t.Fatal(err)
			}
			t.Logf("Redis %s: fail-open tenant saw %v, fail-closed tenant saw %v; slowest answer %v",
				f.name, seen[lenientKey], seen[strictKey], slowest.Round(time.Millisecond))
			if seen[strictKey]["503 quota_unavailable"] == 0 {
				t.Error("the fail-closed tenant was never refused: the outage proves nothing")
			}
			servedAgain("after the fault")
		})
	}
}

// TestChaosStreamNeverEnds: a provider starts its answer and then sends
// nothing more, never ending it: an SSE stream after its first event, or
// a whole answer after its first byte. The route's per-try idle timeout
// (1 s here) ends the attempt: the client's stream is terminated (it does
// not hang until its own timeout) without a completion, or the whole
// answer is a 504 upstream_timeout. The stall is the provider's: its
// usage record says 504 upstream_error for openai, and its breaker, set
// to open at the first failure, opens (Envoy's cut log tells the stall
// from a client leaving: TestChaosClientLeavesMidStream). The next request
// is served.
func TestChaosStreamNeverEnds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault providersim.FaultMode
	}{
		{"stream", providersim.FaultSlowStream},
		{"whole answer", providersim.FaultDrip},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := withHealth(t, oneFailureOpens)
			o.Overlay["routes.yaml"] = chatRouteWith(t, "per_try_idle_timeout: 1s")
			s := startStack(t, o)
			if err := s.Sim.SetFault("openai", providersim.Fault{Mode: tc.fault, Delay: providersim.Duration(time.Hour), Count: 1}); err != nil {
				t.Fatal(err)
			}
			stream := tc.fault == providersim.FaultSlowStream
			before := ledgerRecords(t, s)
			start := time.Now()
			resp := chatRequest(t, s, stream, "never ends")
			body, readErr := io.ReadAll(resp.Body)
			resp.Body.Close()
			took := time.Since(start)
			t.Logf("client saw %d, then %d bytes and %v after %v", resp.StatusCode, len(body), readErr, took.Round(time.Millisecond))
			if took >= 60*time.Second {
				t.Fatal("the answer was never terminated: the client's own timeout ended it")
			}
			switch {
			case stream && strings.Contains(string(body), "data: [DONE]") && readErr == nil:
				t.Errorf("a stream the provider never ended was answered as complete:\n%s", body)
			case !stream && (resp.StatusCode != http.StatusGatewayTimeout || !strings.Contains(string(body), `"upstream_timeout"`)):
				t.Errorf("a whole answer that stalled: %d %s, want 504 upstream_timeout", resp.StatusCode, body)
			}
			// Envoy's own 504 carries no request id: the record is the one new.
			stallBlamedOnOpenAI(t, s, awaitNewRecord(t, s, before), "the stall")
			if m, err := served(t, s, "gpt-4o-mini", ""); err != nil || m == "" {
				t.Errorf("the next request: served by %q (%v)", m, err)
			}
		})
	}
}

// TestChaosClientLeavesMidStream: the other side of
// TestChaosStreamNeverEnds. A client that leaves a stream after its first
// event, while events flow or in a silence shorter than the per-try idle
// timeout, is recorded 499 client_disconnected and never counted against
// the provider: its breaker, set to open at the first failure, stays
// closed.
func TestChaosClientLeavesMidStream(t *testing.T) {
	o := withHealth(t, oneFailureOpens)
	o.Overlay["routes.yaml"] = chatRouteWith(t, "per_try_idle_timeout: 1s")
	s := startStack(t, o)
	for _, tc := range []struct {
		name  string
		delay time.Duration // between the provider's events
		stay  time.Duration // after the first event
	}{
		{"while events flow", 200 * time.Millisecond, 300 * time.Millisecond},
		{"in a silence", time.Hour, 500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.Sim.SetFault("openai", providersim.Fault{Mode: providersim.FaultSlowStream, Delay: providersim.Duration(tc.delay), Count: 1}); err != nil {
				t.Fatal(err)
			}
			resp := streamChat(t, s, "leave early")
			id := resp.Header.Get("X-Request-Id")
			first := make([]byte, 1)
			if _, err := io.ReadFull(resp.Body, first); err != nil {
				t.Fatalf("no first byte: %v", err)
			}
			time.Sleep(tc.stay)
			resp.Body.Close() // the client leaves
			rec := awaitRecord(t, s, id)
			t.Logf("usage record: status %d, error %q, provider %q", rec.Status, rec.ErrorType, rec.Provider)
			if rec.Status != 499 || rec.ErrorType != "client_disconnected" {
				t.Errorf("usage record says %d %q; want 499 client_disconnected", rec.Status, rec.ErrorType)
			}
			// Past the idle timeout: an attempt log entry blaming the
			// provider would have come.
			time.Sleep(1500 * time.Millisecond)
			if breakerOpen(t, s.Replicas[0], "openai") {
				t.Fatal("openai's breaker opened: a client leaving mid-stream was counted against the provider")
			}
		})
	}
}

// TestChaosStreamDrips: a provider streams its answer, then, never
// ending it, sends a keep-alive comment every 300 ms: each resets the
// per-try idle timeout (1 s), so only the route's stream_timeout (2 s
// here) bounds it. The client gets the answer's events, then an OpenAI
// error event (upstream_timeout), and the stream ends; the provider is
// blamed (record 504 upstream_error for openai, its breaker opens).
func TestChaosStreamDrips(t *testing.T) {
	o := withHealth(t, oneFailureOpens)
	o.Overlay["routes.yaml"] = chatRouteWith(t, "per_try_idle_timeout: 1s", "stream_timeout: 2s")
	s := startStack(t, o)
	if err := s.Sim.SetFault("openai", providersim.Fault{Mode: providersim.FaultDripStream, Delay: providersim.Duration(300 * time.Millisecond), Count: 1}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp := streamChat(t, s, "drip")
	body, readErr := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	id := resp.Header.Get("X-Request-Id")
	t.Logf("client saw %d, then %v after %v:\n%s", resp.StatusCode, readErr, took.Round(time.Millisecond), truncate(string(body), 600))
	// 2 s and what a loaded machine adds; Envoy's backstop would be 3 s.
	if took > 10*time.Second {
		t.Errorf("the dripping stream lasted %v: not bounded by stream_timeout", took)
	}
	if strings.Contains(string(body), "data: [DONE]") {
		t.Errorf("a stream cut at stream_timeout was answered as complete")
	}
	var last struct {
		Error *struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    string `json:"code"`
		} `json:"error"`
	}
	events := strings.Split(strings.TrimSpace(string(body)), "\n\n")
	if err := json.Unmarshal([]byte(strings.TrimPrefix(events[len(events)-1], "data: ")), &last); err != nil || last.Error == nil ||
		last.Error.Code != "upstream_timeout" || last.Error.Type != "upstream_error" || last.Error.Message == "" {
		t.Errorf("the stream does not end with an OpenAI error event (upstream_timeout): %q", events[len(events)-1])
	}
	if len(events) < 2 || !strings.Contains(events[0], `"chat.completion.chunk"`) {
		t.Errorf("the answer's events did not reach the client before the error")
	}
	stallBlamedOnOpenAI(t, s, awaitRecord(t, s, id), "the dripping stream")
}

// stallBlamedOnOpenAI checks that rec, the usage record of a request whose
// provider stalled (what), is openai's 504 upstream_error and that
// openai's breaker, which opens at one failure, opened for it.
func stallBlamedOnOpenAI(t *testing.T, s *stack.Stack, rec ledger.Record, what string) {
	t.Helper()
	t.Logf("usage record: status %d, error %q, provider %q", rec.Status, rec.ErrorType, rec.Provider)
	if rec.Status != http.StatusGatewayTimeout || rec.ErrorType != "upstream_error" || rec.Provider != "openai" {
		t.Errorf("usage record says %d %q for %q; want 504 upstream_error for openai, whose %s it was", rec.Status, rec.ErrorType, rec.Provider, what)
	}
	if !breakerOpen(t, s.Replicas[0], "openai") {
		t.Errorf("openai's breaker did not open: %s was not counted against the provider", what)
	}
}

// oneFailureOpens is a health section whose breaker opens at a provider's
// first failure, so a test sees whether one failure was counted.
const oneFailureOpens = `
    min_samples: 100000
    breaker: {consecutive_failures: 1, open_timeout: 60s}
    active_checks: {interval: 0s}
`

// streamChat starts a streamed chat completion for gpt-4o-mini, which
// must begin 200.
func streamChat(t *testing.T, s *stack.Stack, content string) *http.Response {
	t.Helper()
	resp := chatRequest(t, s, true, content)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	return resp
}

// chatRequest sends a chat completion for gpt-4o-mini, streamed or whole.
func chatRequest(t *testing.T, s *stack.Stack, stream bool, content string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/chat/completions",
		strings.NewReader(fmt.Sprintf(`{"model":"gpt-4o-mini","stream":%t,"messages":[{"role":"user","content":%q}]}`, stream, content)))
	req.Header.Set("Authorization", "Bearer "+demoKey)
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// awaitNewRecord waits for the one usage record not in before.
func awaitNewRecord(t *testing.T, s *stack.Stack, before map[string]ledger.Record) ledger.Record {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var got []ledger.Record
		for id, r := range ledgerRecords(t, s) {
			if _, old := before[id]; !old {
				got = append(got, r)
			}
		}
		switch {
		case len(got) == 1:
			return got[0]
		case len(got) > 1:
			t.Fatalf("%d new usage records, want one: %+v", len(got), got)
		case time.Now().After(deadline):
			t.Fatal("no new usage record")
		}
	}
}

// awaitRecord waits for request id's usage record.
func awaitRecord(t *testing.T, s *stack.Stack, id string) ledger.Record {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if rec, ok := ledgerRecords(t, s)[id]; ok {
			return rec
		}
		if time.Now().After(deadline) {
			t.Fatalf("no usage record for %s", id)
		}
	}
}

// TestChaosProviderDrips: a provider answers a non-streamed request 200
// and then sends its body one byte every 500 ms; each byte resets the
// per-try idle timeout, so only the route's answer_timeout (3 s here)
// bounds it. The client gets, within that bound, a clean OpenAI error (the
// answer had started, so Envoy cannot fail it over); the provider is
// blamed (its breaker, set to open at the first failure, opens); the
// request has its usage record.
func TestChaosProviderDrips(t *testing.T) {
	o := withHealth(t, `
    min_samples: 100000
    breaker: {consecutive_failures: 1, open_timeout: 60s}
    active_checks: {interval: 0s}
`)
	o.Overlay["routes.yaml"] = chatRouteWith(t, "per_try_idle_timeout: 1s", "answer_timeout: 3s")
	s := startStack(t, o)
	if err := s.Sim.SetFault("openai", providersim.Fault{Mode: providersim.FaultDrip, Delay: providersim.Duration(500 * time.Millisecond), Count: 1}); err != nil {
		t.Fatal(err)
	}
	before := ledgerRecords(t, s)
	start := time.Now()
	status, body := rawChat(t, s.URL, "gpt-4o-mini")
	took := time.Since(start)
	t.Logf("client saw %d after %v: %s", status, took.Round(time.Millisecond), truncate(string(body), 200))
	// 3 s and the time a loaded machine takes; the drip alone would last
	// minutes (an answer of some hundred bytes at two bytes a second).
	if took > 15*time.Second {
		t.Errorf("the dripping answer took %v: not bounded by answer_timeout", took)
	}
	var got struct {
		Model string `json:"model"`
		Error *struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("status %d, body not JSON: %q", status, body)
	}
	switch {
	case status == http.StatusOK && got.Model != "" && !strings.HasPrefix(got.Model, "gpt-4o-mini"):
		// A fallback provider's answer.
	case status == http.StatusGatewayTimeout && got.Error != nil && got.Error.Message != "" && got.Error.Code == "upstream_timeout":
	default:
		t.Errorf("status %d with %s: neither a fallback answer nor a clean 504 OpenAI error", status, body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !breakerOpen(t, s.Replicas[0], "openai") {
		if time.Now().After(deadline) {
			t.Fatal("openai's breaker did not open: the dripping provider's failure was not counted")
		}
		time.Sleep(100 * time.Millisecond)
	}
	var rec *ledger.Record
	for rec == nil && time.Now().Before(deadline) {
		for id, r := range ledgerRecords(t, s) {
			if _, old := before[id]; !old && r.RequestedModel == "gpt-4o-mini" {
				rec = &r
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if rec == nil {
		t.Fatal("no usage record for the dripped request")
	}
	t.Logf("usage record: status %d, error %q, provider %q", rec.Status, rec.ErrorType, rec.Provider)
	if rec.Status != status {
		t.Errorf("usage record says %d, the client saw %d", rec.Status, status)
	}
}

// chatRouteWith is configs/local's routes.yaml with settings added to its
// first chat route.
func chatRouteWith(t *testing.T, settings ...string) string {
	t.Helper()
	root, _ := stack.ModuleRoot()
	routes, err := os.ReadFile(filepath.Join(root, "configs", "local", "routes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const api = "    api: chat_completions\n"
	out := strings.Replace(string(routes), api, api+"    "+strings.Join(settings, "\n    ")+"\n", 1)
	if out == string(routes) {
		t.Fatal("routes.yaml has no chat route")
	}
	return out
}

// TestChaosBudgetSpoolOutlivesTheProcess: Redis goes down (killed; it
// keeps what it acknowledged in its append-only file, as a production
// Redis with persistence does) while a tenant whose limits fail open is
// served. ext_proc keeps the budget commits Redis cannot take (its
// requests' spend, and the spend its budget leases had lent) in its disk
// spool; it is killed (kill -9) with Redis still down and restarted, and
// serves on; then Redis comes back. The restarted process replays what the
// dead one kept and what it kept itself: the tenant's committed spend
// equals what its ledger rows cost, every commit counted exactly once (none
// lost, none twice, none dropped). What the dead process still held (a
// budget lease that lent nothing) is indexed for the sweep.
func TestChaosBudgetSpoolOutlivesTheProcess(t *testing.T) {
	const lenientKey, strictKey = "sk-e2e-lenient", "sk-e2e-strict"
	s := startStack(t, stack.Options{RedisDurable: true, Overlay: map[string]string{
		"tenants.yaml": fmt.Sprintf(outageTenants, store.HashKey(lenientKey), store.HashKey(strictKey)),
	}})
	metrics := s.Replicas[0].ExtProcMetrics + "/metrics"
	value := func(name string, match ...string) float64 {
		t.Helper()
		v, err := harness.MetricSum(metrics, name, match...)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	waitFor := func(what string, d time.Duration, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(d); !ok(); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %v", what, d)
			}
		}
	}
	var ids []string
	serve := func(n int, when string) {
		t.Helper()
		for range n {
			a := chatAs(t, http.DefaultClient, s, lenientKey, "gpt-4o-mini", 10)
			if a.status != http.StatusOK {
				t.Fatalf("%s: %d %s, want every request of a fail-open tenant served", when, a.status, a.body)
			}
			ids = append(ids, a.header.Get("X-Request-Id"))
		}
	}
	serve(30, "Redis up")
	s.Kill("redis")
	// First from the budget lease taken before the outage, while it lasts
	// (a lease is retired within four lease ages, 4 s, and the spend it
	// lent spooled, with no Redis to take it), then one by one, each
	// admitted open and its spend spooled (Spooler.Record).
	serve(20, "Redis down")
	time.Sleep(4*time.Second + time.Second)
	serve(20, "Redis down, the lease retired")
	// Each request is settled just after its client has the answer.
	waitFor("every request settled", 10*time.Second, func() bool {
		return value("switchyard_quota_settlements_total") >= float64(len(ids))
	})
	kept := value("switchyard_store_spool_depth")
	onDisk := value("switchyard_spool_bytes", `spool="budget"`)
	t.Logf("before the kill: %.0f budget commits spooled (%.0f bytes on disk); budget leases taken %.0f, spooled %.0f",
		kept, onDisk, value("switchyard_lease_budget_leases_total", `outcome="taken"`), value("switchyard_lease_budget_leases_total", `outcome="spooled"`))
	if kept == 0 || onDisk == 0 {
		t.Fatal("nothing was spooled during the outage: the case proves nothing")
	}

	killed := time.Now()
	s.Kill("extproc-0")
	if err := s.Restart("extproc-0"); err != nil {
		t.Fatal(err)
	}
	waitFor("ext_proc restarted", 30*time.Second, func() bool {
		_, err := harness.MetricSum(metrics, "switchyard_store_spool_depth")
		return err == nil
	})
	if left := value("switchyard_store_spool_depth"); left < kept {
		t.Errorf("the restarted process queued %.0f budget commits for replay, the dead one had kept %.0f", left, kept)
	}
	serve(10, "Redis down, ext_proc restarted")

	if err := s.Restart("redis"); err != nil {
		t.Fatal(err)
	}
	waitFor("the spool replayed once Redis was back", 30*time.Second, func() bool { return value("switchyard_store_spool_depth") == 0 })
	replayed := value("switchyard_store_replayed_commits_total")
	dropped := value("switchyard_store_dropped_commits_total")
	t.Logf("after Redis came back: the restarted process replayed %.0f budget commits, dropped %.0f", replayed, dropped)
	if replayed < kept {
		t.Errorf("replayed %.0f budget commits, want at least the %.0f the dead process kept", replayed, kept)
	}
	if dropped != 0 {
		t.Errorf("%.0f spooled budget commits were dropped", dropped)
	}

	rc := redis.NewClient(&redis.Options{Addr: s.RedisAddr})
	defer rc.Close()
	st := store.NewRedis(rc, store.Options{})
	pol, err := policy.Load(s.PolicyDir)
	if err != nil {
		t.Fatal(err)
	}
	line := store.BudgetLine{Scope: store.Scope{Tenant: "lenient"}, Period: store.Daily, Limit: pol.Tenants[1].Budget.DailyMicros}
	rows := ledgerRecords(t, s)
	var billed int64
	for _, id := range ids {
		r, ok := rows[id]
		if !ok {
			t.Errorf("served request %s has no ledger row", id)
			continue
		}
		billed += r.CostMicros
	}
	var tenantRows int64
	for _, r := range rows {
		if r.Tenant == "lenient" {
			tenantRows += r.CostMicros
		}
	}
	// The restarted process's own leases commit once idle (3 s).
	var b store.BudgetState
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if b, err = st.Budget(t.Context(), line); err != nil {
			t.Fatal(err)
		}
		if b.Spent >= tenantRows || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("lenient: %d requests served, their ledger rows cost %d micro-USD (all its rows %d); Redis says spent %d, reserved %d",
		len(ids), billed, tenantRows, b.Spent, b.Reserved)
	if tenantRows != billed {
		t.Errorf("the tenant's ledger rows cost %d micro-USD, its served requests' %d", tenantRows, billed)
	}
	if b.Spent != tenantRows {
		t.Errorf("committed spend %d micro-USD, the ledger's rows cost %d: a commit was lost or counted twice", b.Spent, tenantRows)
	}
	assertHoldsExpire(t, s, "lenient", killed, quotaspec.Default().ReservationTTL)
}
