package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard/switchyard/e2e/harness"
	"github.com/switchyard/switchyard/state/events"
	"github.com/switchyard/switchyard/state/ledger"
)

// TestUsageEventsOnePerLedgerRow: a consumer of the usage events stream
// reads exactly one response.generated event per ledger row, with the
// row's figures, though Redis crashed and came back empty in the middle
// and requests were served while it was away; the webhook, which failed
// its first calls, receives the same events, each signed.
func TestUsageEventsOnePerLedgerRow(t *testing.T) {
	root, _ := harness.ModuleRoot()
	gw, err := os.ReadFile(filepath.Join(root, "configs", "local", "gateway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	hook := &webhookReceiver{t: t, secret: []byte("e2e-webhook-secret"), failFirst: 2, seen: map[string]int{}}
	hs := httptest.NewServer(hook)
	defer hs.Close()
	cfg := fmt.Sprintf("  events:\n    stream: e2e\n    max_len: 10000\n    webhook: {url: %q, secret: {env: E2E_WEBHOOK_SECRET}}\n", hs.URL+"/hooks/usage")
	s := startStack(t, harness.Options{
		Overlay: map[string]string{"gateway.yaml": string(gw) + cfg},
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
		if e.Type != events.Type || e.Tenant != r.Tenant || e.Status != r.Status || e.CostMicros != r.CostMicros ||
			e.InputTokens != r.InputTokens || e.OutputTokens != r.OutputTokens || e.Provider != r.Provider || e.Attempts != r.Attempts {
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

	mu     sync.Mutex
	failed int
	seen   map[string]int
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
	var got struct{ Events []events.Usage }
	if err := json.Unmarshal(body, &got); err != nil {
		h.t.Errorf("webhook body: %v", err)
	}
	for _, e := range got.Events {
		h.seen[e.RequestID]++
	}
}

func (h *webhookReceiver) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.seen)
}
