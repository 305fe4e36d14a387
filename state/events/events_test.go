package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard/switchyard/state/events"
	"github.com/switchyard/switchyard/state/ledger"
	"github.com/switchyard/switchyard/state/store/redistest"
)

func record(id string) ledger.Record {
	return ledger.Record{RequestID: id, Time: time.Unix(1700000000, 0), Tenant: "acme", App: "chat", KeyName: "k1",
		RequestedModel: "gpt-4o-mini", Provider: "openai", InputTokens: 10, OutputTokens: 5, CostMicros: 42, PriceSource: "catalog", Status: 200, Attempts: 2,
		Latency: 1500 * time.Microsecond}
}

// TestStreamOncePerID: a batch published twice (a retry after a lost
// reply) adds each event once, with the record's figures, and the stream
// stays near its MAXLEN.
func TestStreamOncePerID(t *testing.T) {
	srv, err := redistest.New()
	if err == nil {
		err = srv.Start()
	}
	if err != nil {
		t.Fatal("needs a real redis-server:", err)
	}
	defer srv.Close()
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rc.Close()
	ctx := context.Background()
	sink := events.Records(events.NewStream(rc, "t", "usage", 1000))

	batch := []ledger.Record{record("a"), record("b")}
	for i, want := range []int{2, 0} {
		n, err := sink.Insert(ctx, batch)
		if err != nil || n != want {
			t.Fatalf("insert %d: %d, %v; want %d new", i, n, err, want)
		}
	}
	msgs, err := rc.XRange(ctx, events.Key("t", "usage"), "-", "+").Result()
	if err != nil || len(msgs) != 2 {
		t.Fatalf("stream: %d entries, %v; want 2", len(msgs), err)
	}
	e, err := events.Decode(msgs[0].Values)
	if err != nil {
		t.Fatal(err)
	}
	want := events.Usage{Type: events.Type, RequestID: "a", Time: time.Unix(1700000000, 0).UTC(), Tenant: "acme", App: "chat", KeyName: "k1",
		Model: "gpt-4o-mini", Provider: "openai", Attempts: 2, InputTokens: 10, OutputTokens: 5, CostMicros: 42, PriceSource: "catalog", LatencyMS: 1.5, Status: 200}
	if !reflect.DeepEqual(e, want) {
		t.Errorf("event\n got %+v\nwant %+v", e, want)
	}
	if msgs[0].Values["type"] != events.Type || msgs[0].Values["id"] != "a" {
		t.Errorf("entry fields %v", msgs[0].Values)
	}

	for i := range 30 {
		var b []ledger.Record
		for j := range 200 {
			b = append(b, record(strings.Repeat("x", i+1)+string(rune('a'+j%26))+string(rune('a'+j/26))))
		}
		if _, err := sink.Insert(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := rc.XLen(ctx, events.Key("t", "usage")).Result(); n > 1200 {
		t.Errorf("stream holds %d entries; MAXLEN ~1000", n)
	}

	srv.Kill()
	if _, err := sink.Insert(ctx, []ledger.Record{record("c")}); !errors.Is(err, ledger.ErrUnavailable) {
		t.Errorf("redis down: %v; want ErrUnavailable", err)
	}
}

// receiver is a webhook receiver that answers with the statuses it is
// given in turn (then 200) and keeps what it accepted.
type receiver struct {
	mu       sync.Mutex
	statuses []int
	calls    int
	bodies   [][]byte
	sigs     []string
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	status := http.StatusOK
	if len(r.statuses) > 0 {
		status, r.statuses = r.statuses[0], r.statuses[1:]
	}
	if status == http.StatusOK {
		r.bodies = append(r.bodies, b)
		r.sigs = append(r.sigs, req.Header.Get(events.SignatureHeader))
	}
	w.WriteHeader(status)
}

func TestWebhook(t *testing.T) {
	secret := []byte("whsec-test")
	for _, tc := range []struct {
		name       string
		statuses   []int
		wantErr    error // nil, ErrUnavailable, or errRefused
		wantPosted bool
	}{
		{name: "ok", wantPosted: true},
		{name: "server error is retried", statuses: []int{503}, wantErr: ledger.ErrUnavailable},
		{name: "rate limited is retried", statuses: []int{429}, wantErr: ledger.ErrUnavailable},
		{name: "bad request is refused", statuses: []int{400}, wantErr: errRefused},
		{name: "a redirect is not followed", statuses: []int{307}, wantErr: errRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rcv := &receiver{statuses: tc.statuses}
			srv := httptest.NewServer(rcv)
			defer srv.Close()
			n, err := events.Records(events.NewWebhook(srv.URL, secret, time.Second)).Insert(context.Background(), []ledger.Record{record("a"), record("b")})
			switch {
			case tc.wantErr == nil && (err != nil || n != 2):
				t.Fatalf("%d, %v; want 2 sent", n, err)
			case tc.wantErr == ledger.ErrUnavailable && !errors.Is(err, ledger.ErrUnavailable):
				t.Fatalf("%v; want ErrUnavailable", err)
			case tc.wantErr == errRefused && (err == nil || errors.Is(err, ledger.ErrUnavailable)):
				t.Fatalf("%v; want a refusal", err)
			}
			if !tc.wantPosted {
				return
			}
			var got struct{ Events []events.Usage }
			if err := json.Unmarshal(rcv.bodies[0], &got); err != nil || len(got.Events) != 2 || got.Events[1].RequestID != "b" {
				t.Fatalf("body %s: %v", rcv.bodies[0], err)
			}
			if err := events.Verify(secret, rcv.sigs[0], rcv.bodies[0], time.Now(), time.Minute); err != nil {
				t.Errorf("signature %q: %v", rcv.sigs[0], err)
			}
			if err := events.Verify([]byte("other"), rcv.sigs[0], rcv.bodies[0], time.Now(), time.Minute); err == nil {
				t.Error("a signature made with another secret verified")
			}
			if err := events.Verify(secret, rcv.sigs[0], append(rcv.bodies[0], ' '), time.Now(), time.Minute); err == nil {
				t.Error("a changed body verified")
			}
			if err := events.Verify(secret, rcv.sigs[0], rcv.bodies[0], time.Now().Add(time.Hour), time.Minute); err == nil {
				t.Error("an hour-old signature verified")
			}
		})
	}
}

var errRefused = errors.New("refused")

// TestWebhookRetriedThroughWriter: behind a ledger.Writer, events a
// webhook could not take at first arrive once it answers, none lost.
func TestWebhookRetriedThroughWriter(t *testing.T) {
	rcv := &receiver{statuses: []int{500, 502, 503}}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	p := events.NewPublisher(ledger.WriterOptions{MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond},
		map[string]events.Target{"webhook": events.NewWebhook(srv.URL, []byte("s"), time.Second)})
	for _, id := range []string{"a", "b", "c"} {
		p.Write(record(id))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	ids := map[string]int{}
	for _, b := range rcv.bodies {
		var got struct{ Events []events.Usage }
		_ = json.Unmarshal(b, &got)
		for _, e := range got.Events {
			ids[e.RequestID]++
		}
	}
	if len(ids) != 3 || ids["a"] != 1 || ids["b"] != 1 || ids["c"] != 1 || rcv.calls < 4 {
		t.Errorf("received %v in %d calls; want a, b and c once each after 3 failed calls", ids, rcv.calls)
	}
}

// TestEventOfACacheHit: a response cache hit's event says what it saved,
// and an event that saved nothing leaves the field out.
func TestEventOfACacheHit(t *testing.T) {
	hit := record("h")
	hit.Provider, hit.CostMicros, hit.SavedMicros = "cache", 0, 42
	if e := events.Of(&hit); e.Provider != "cache" || e.CostMicros != 0 || e.SavedMicros != 42 {
		t.Errorf("event of a hit %+v; want provider cache, no cost, 42 saved", e)
	}
	plain := record("p")
	b, err := json.Marshal(events.Of(&plain))
	if err != nil || strings.Contains(string(b), "saved_micros") {
		t.Errorf("event of a provider's answer: %s %v; want no saved_micros", b, err)
	}
}

// TestEventOfATaggedRequest: the event carries the request's tags and
// session as the ledger row does, and an untagged request's leaves both
// out.
func TestEventOfATaggedRequest(t *testing.T) {
	tagged := record("t")
	tagged.Tags, tagged.SessionID = map[string]string{"team": "search", "feature": "summarize"}, "d9194fc7"
	b, err := json.Marshal(events.Of(&tagged))
	if err != nil {
		t.Fatal(err)
	}
	if want := `"tags":{"feature":"summarize","team":"search"},"session_id":"d9194fc7"`; !strings.Contains(string(b), want) {
		t.Errorf("event of a tagged request %s; want it to hold %s", b, want)
	}
	plain := record("p")
	if b, _ := json.Marshal(events.Of(&plain)); strings.Contains(string(b), "tags") || strings.Contains(string(b), "session_id") {
		t.Errorf("event of an untagged request %s; want neither tags nor session_id", b)
	}
}
