package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard/switchyard/stack"
	"github.com/switchyard/switchyard/state/events"
	"github.com/switchyard/switchyard/state/ledger"
)

// TestUsageEventsOnePerLedgerRow: a consumer of the usage events stream
// reads exactly one response.generated event per ledger row, with the
// row's figures, though Redis crashed and came back empty in the middle
// and requests were served while it was away; the webhook, which failed
// its first calls, receives the same events, each signed.
func TestUsageEventsOnePerLedgerRow(t *testing.T) {
	gw := localGateway(t)
	hook := &webhookReceiver{t: t, secret: []byte("e2e-webhook-secret"), failFirst: 2, seen: map[string]int{}}
	hs := httptest.NewServer(hook)
	defer hs.Close()
	cfg := fmt.Sprintf("  events:\n    stream: e2e\n    max_len: 10000\n    webhook: {url: %q, secret: {env: E2E_WEBHOOK_SECRET}}\n", hs.URL+"/hooks/usage")
	s := startStack(t, stack.Options{
		Overlay: map[string]string{"gateway.yaml": gw + cfg},
		Env:     []string{"E2E_WEBHOOK_SECRET=" + string(hook.secret)},
	})

	var (
		mu   sync.Mutex
		seen = map[string][]events.Usage{}
	)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { // the consumer: reads on across the restart, from where it was
		defer close(done)
		rc := redis.NewClient(&redis.Options{Addr: s.RedisAddr, MaxRetries: -1})
		defer rc.Close()
		last := "0"
		for ctx.Err() == nil {
			res, err := rc.XRead(ctx, &redis.XReadArgs{Streams: []string{events.Key("sy", "e2e"), last}, Count: 100, Block: 200 * time.Millisecond}).Result()
			if err != nil {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			for _, st := range res {
				for _, m := range st.Messages {
					last = m.ID
					e, err := events.Decode(m.Values)
					if err != nil {
						t.Errorf("entry %s: %v", m.ID, err)
						continue
					}
					mu.Lock()
					seen[e.RequestID] = append(seen[e.RequestID], e)
					mu.Unlock()
				}
			}
		}
	}()
	defer func() { cancel(); <-done }()

	send := func(n int) {
		for range n {
			chatAs(t, fresh, s, demoKey, "gpt-4o-mini", 5)
		}
	}
	send(5)
	s.Kill("redis")
	send(5) // served or refused while the store is away: rows either way
	if err := s.RestartRedis(); err != nil {
		t.Fatal(err)
	}
	send(5)

	var rows map[string]ledger.Record
	deadline := time.Now().Add(45 * time.Second)
	for {
		rows = ledgerRecords(t, s)
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if len(rows) >= 15 && n >= len(rows) && hook.count() >= len(rows) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 45s: %d ledger rows, stream events for %d of them, webhook events for %d", len(rows), n, hook.count())
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(time.Second) // a duplicate would come now
	mu.Lock()
	defer mu.Unlock()
	for id, r := range rows {
		evs := seen[id]
		if len(evs) != 1 {
			t.Errorf("request %s: %d events, want 1", id, len(evs))
			continue
		}
		e := evs[0]
		if e.Type != events.Type || e.Tenant != r.Tenant || e.App != r.App || e.KeyName != r.KeyName || e.Model != r.RequestedModel ||
			e.ServedModel != r.ServedModel || e.Status != r.Status || e.CostMicros != r.CostMicros || e.SavedMicros != r.SavedMicros ||
			e.InputTokens != r.InputTokens || e.OutputTokens != r.OutputTokens || e.Provider != r.Provider || e.Attempts != r.Attempts ||
			e.LatencyMS != float64(r.Latency.Microseconds())/1000 || !e.Time.Truncate(time.Microsecond).Equal(r.Time) { // the ledger keeps microseconds
			t.Errorf("request %s: event %+v does not match its row %+v", id, e, r)
		}
	}
	for id := range seen {
		if _, ok := rows[id]; !ok {
			t.Errorf("event for %s, which has no ledger row", id)
		}
	}
	hook.mu.Lock()
	defer hook.mu.Unlock()
	for id := range rows {
		if hook.seen[id] != 1 {
			t.Errorf("request %s: %d webhook events, want 1", id, hook.seen[id])
		}
	}
	if len(hook.seen) != len(rows) || hook.failed != 2 {
		t.Errorf("webhook: events for %d requests (want %d), %d calls failed (want 2)", len(hook.seen), len(rows), hook.failed)
	}
}

// webhookReceiver is an events webhook: it answers 503 to its first
// failFirst calls, then checks each call's signature and counts the
// events by request ID.
type webhookReceiver struct {
	t         *testing.T
	secret    []byte
	failFirst int

	mu      sync.Mutex
	failed  int
	seen    map[string]int // usage events by request ID
	budgets []events.Budget
}

func (h *webhookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failed < h.failFirst {
		h.failed++
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	if err := events.Verify(h.secret, r.Header.Get(events.SignatureHeader), body, time.Now(), time.Minute); err != nil {
		h.t.Errorf("webhook call: %v", err)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var got struct{ Events []json.RawMessage }
	if err := json.Unmarshal(body, &got); err != nil {
		h.t.Errorf("webhook body: %v", err)
	}
	for _, raw := range got.Events {
		var e events.Usage
		var b events.Budget
		_ = json.Unmarshal(raw, &e)
		switch e.Type {
		case events.Type:
			h.seen[e.RequestID]++
		case events.BudgetType:
			_ = json.Unmarshal(raw, &b)
			h.budgets = append(h.budgets, b)
		default:
			h.t.Errorf("webhook event of type %q: %s", e.Type, raw)
		}
	}
}

func (h *webhookReceiver) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.seen)
}

// TestBudgetAlertsOncePerThreshold: two replicas serve a tenant until its
// daily budget refuses; the stream and the webhook each get one
// budget.threshold event for 50%, 80% and 100% of it, though both replicas
// saw every crossing.
func TestBudgetAlertsOncePerThreshold(t *testing.T) {
	gw := localGateway(t)
	hook := &webhookReceiver{t: t, secret: []byte("e2e-webhook-secret"), seen: map[string]int{}}
	hs := httptest.NewServer(hook)
	defer hs.Close()
	const key = "sk-e2e-tight"
	sum := sha256.Sum256([]byte(key))
	cfg := fmt.Sprintf("  events:\n    stream: alerts\n    webhook: {url: %q, secret: {env: E2E_WEBHOOK_SECRET}}\n", hs.URL)
	s := startStack(t, stack.Options{
		Replicas: 2,
		Overlay: map[string]string{
			"gateway.yaml": gw + cfg,
			"tenants.yaml": fmt.Sprintf(tightTenant, hex.EncodeToString(sum[:])),
		},
		Env: []string{"E2E_WEBHOOK_SECRET=" + string(hook.secret)},
	})

	// Until the budget refuses, then a few more so that both replicas see
	// it exhausted (fresh connections spread requests across them).
	refused := 0
	for i := 0; i < 400 && refused < 6; i++ {
		switch a := chatAs(t, fresh, s, key, "gpt-4o-mini", 10); {
		case a.status == http.StatusTooManyRequests && a.code() == "insufficient_quota":
			refused++
		case a.status != http.StatusOK:
			t.Fatalf("answer %d %s", a.status, a.body)
		}
	}
	if refused == 0 {
		t.Fatal("the budget never refused")
	}

	rc := redis.NewClient(&redis.Options{Addr: s.RedisAddr})
	defer rc.Close()
	want := []int{50, 80, 100}
	var onStream, onHook []int
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		msgs, err := rc.XRange(context.Background(), events.Key("sy", "alerts"), "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		onStream = onStream[:0]
		for _, m := range msgs {
			if m.Values["type"] != events.BudgetType {
				continue
			}
			b, err := events.DecodeBudget(m.Values)
			if err != nil {
				t.Fatal(err)
			}
			if b.Tenant != "tight" || b.Period != "daily" || b.LimitMicros != 500 || b.App != "" || b.KeyName != "" {
				t.Errorf("alert %+v; want tight's daily budget of 500 micro-USD", b)
			}
			onStream = append(onStream, b.Threshold)
		}
		hook.mu.Lock()
		onHook = onHook[:0]
		for _, b := range hook.budgets {
			onHook = append(onHook, b.Threshold)
			if b.SpentMicros*100 < int64(b.Threshold)*b.LimitMicros && b.Threshold != 100 {
				t.Errorf("alert at %d%% with %d of %d spent", b.Threshold, b.SpentMicros, b.LimitMicros)
			}
		}
		hook.mu.Unlock()
		if slices.Equal(onStream, want) && slices.Equal(onHook, want) || time.Now().After(deadline) {
			break
		}
	}
	time.Sleep(time.Second) // a duplicate would come now
	hook.mu.Lock()
	defer hook.mu.Unlock()
	if !slices.Equal(onStream, want) || !slices.Equal(onHook, want) || len(hook.budgets) != 3 {
		t.Errorf("alerts on the stream at %v%%, on the webhook %d; want %v on each", onStream, len(hook.budgets), want)
	}
}
