package e2e

import (
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/e2e/harness"
	"github.com/switchyard/switchyard/envoy/contract"
)

// TestExtProcChannelIsOwnerOnly: Envoy reaches ext_proc over a Unix socket
// only their user may open (issue 14, item 7), and requests are served
// over it.
func TestExtProcChannelIsOwnerOnly(t *testing.T) {
	t.Parallel()
	r := shared.Replicas[0]
	fi, err := os.Stat(r.ExtProcSocket)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: mode %v, want a socket with 0600", r.ExtProcSocket, fi.Mode())
	}
	resp, err := http.Get(r.EnvoyAdmin + "/clusters")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := contract.ExtProcCluster + "::" + r.ExtProcSocket + "::"; !strings.Contains(string(b), want) {
		t.Fatalf("Envoy's ext_proc cluster is not the socket (want a host line %q):\n%s", want, grepLines(string(b), contract.ExtProcCluster+"::"))
	}
	if code, _, body := post(t, shared, demoKey, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`); code != http.StatusOK {
		t.Fatalf("a request over the socket: %d %s", code, body)
	}
}

// grepLines returns the lines of s that contain sub (a few, for messages).
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) && len(out) < 5 {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestHeaderWithUnderscoreIsRefused: a header such as x_user_id, which a
// proxy behind the gateway could fold into x-user-id, is refused by Envoy
// before any filter runs (gateway.edge.headers_with_underscores: reject).
// Envoy answers such a request by closing the HTTP/1 connection (the
// access log records 400, http1.unexpected_underscore) and by resetting an
// HTTP/2 stream; nothing is served and nothing reaches ext_proc.
func TestHeaderWithUnderscoreIsRefused(t *testing.T) {
	t.Parallel()
	rejected := func() float64 {
		v, err := harness.MetricSum(shared.Replicas[0].EnvoyAdmin+"/stats/prometheus", "envoy_http1_requests_rejected_with_underscores_in_headers")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := rejected()
	req, _ := http.NewRequest(http.MethodPost, shared.URL+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+demoKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header["X_user_id"] = []string{"someone-else"}
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("status %d, want the request refused: %s", resp.StatusCode, b)
		}
	}
	if after := rejected(); after != before+1 {
		t.Errorf("Envoy's count of requests refused for underscores went from %v to %v, want one more", before, after)
	}
}

// TestOneClientFloodingDoesNotStarveAnother: with a small listener bucket,
// one tenant's key sending as fast as it can runs out of its own bucket,
// not the listener's: another tenant's requests in the same second are
// served (before each client had a bucket, the flood drained the
// listener's and the other tenant got 429).
func TestOneClientFloodingDoesNotStarveAnother(t *testing.T) {
	t.Parallel()
	s := startStack(t, withLocalRateLimit(t, "{requests_per_second: 20, burst: 20, per_client: {requests_per_second: 5, burst: 5}}"))

	flood := func(stop <-chan struct{}, codes chan<- int) {
		for {
			select {
			case <-stop:
				return
			default:
			}
			req, _ := http.NewRequest(http.MethodGet, s.URL+"/v1/models", nil)
			req.Header.Set("Authorization", "Bearer "+demoKey)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				continue
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes <- resp.StatusCode
		}
	}
	stop := make(chan struct{})
	codes := make(chan int, 1<<16)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); flood(stop, codes) }()
	}
	time.Sleep(300 * time.Millisecond) // the flood is under way
	var other []int
	for range 3 {
		code, _, body := post(t, s, teamKey, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`)
		other = append(other, code)
		if code != http.StatusOK {
			t.Logf("team: %d %s", code, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	close(codes)
	limited, served := 0, 0
	for c := range codes {
		switch c {
		case http.StatusTooManyRequests:
			limited++
		case http.StatusOK:
			served++
		}
	}
	if limited == 0 {
		t.Fatalf("the flood was never limited (%d served): the test did not flood", served)
	}
	for _, c := range other {
		if c != http.StatusOK {
			t.Fatalf("the other tenant got %v while the flood was limited %d times (served %d)", other, limited, served)
		}
	}
	t.Logf("flood: %d served, %d limited; other tenant: %v", served, limited, other)
}
