package extprocapp

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func noneUnreachable() []string { return nil }

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
	return w.Code, w.Body.String()
}

// TestProfilesOnlyWhenAsked: the metrics address serves no Go profiles
// unless -pprof is given.
func TestProfilesOnlyWhenAsked(t *testing.T) {
	c, err := parseFlags(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	version := func() string { return "v1" }
	if code, _ := get(t, opsMux(prometheus.NewRegistry(), version, nil, noneUnreachable, c.pprof), "/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("by default /debug/pprof/ answers %d, want 404", code)
	}
	c, err = parseFlags([]string{"-pprof"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := get(t, opsMux(prometheus.NewRegistry(), version, nil, noneUnreachable, c.pprof), "/debug/pprof/"); code != http.StatusOK {
		t.Errorf("with -pprof /debug/pprof/ answers %d, want 200", code)
	}
}

// TestLivenessAndReadiness: liveness says the process serves whatever its
// dependencies do; readiness fails, naming it, while one is down.
func TestLivenessAndReadiness(t *testing.T) {
	var redisDown error
	checks := []check{
		{name: "ledger", ping: func(context.Context) error { return nil }},
		{name: "redis", ping: func(context.Context) error { return redisDown }},
	}
	var unreachable []string
	mux := opsMux(prometheus.NewRegistry(), func() string { return "v7" }, checks, func() []string { return unreachable }, false)
	if code, body := get(t, mux, "/readyz"); code != http.StatusOK || body != "ready\n" {
		t.Errorf("all up: /readyz = %d %q, want 200 ready", code, body)
	}
	unreachable = []string{"provider openai unreachable since 2026-12-05T10:00:00Z: DNS: api.openai.com resolved to no address"}
	if code, body := get(t, mux, "/readyz"); code != http.StatusOK || body != "ready\n"+unreachable[0]+"\n" {
		t.Errorf("a provider unreachable: /readyz = %d %q, want 200 naming it", code, body)
	}
	redisDown = errors.New("connection refused")
	if code, body := get(t, mux, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "redis") {
		t.Errorf("redis down: /readyz = %d %q, want 503 naming redis", code, body)
	}
	if code, body := get(t, mux, "/healthz"); code != http.StatusOK || body != "v7" {
		t.Errorf("redis down: /healthz = %d %q, want 200 with the policy version", code, body)
	}
}
