package e2e

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
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
	status int // 0: no HTTP answer (a transport error)
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
// the restart, and every request after that is served.
func TestChaosExtProcKilled(t *testing.T) {
	s := startStack(t, defaultOptions())
	l := startLoad(s.URL, 4, 20*time.Millisecond)
	time.Sleep(2 * time.Second)
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
