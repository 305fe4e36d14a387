package admin

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/audit"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/state/priors"
	"github.com/switchyard/switchyard/state/store"
)

// domainsRig is keysRig whose gateway learns domain priors on route
// chat, where acme's web app has taught one domain.
func domainsRig(t *testing.T, learn bool) *keysRig {
	t.Helper()
	r := newKeysRig(t, store.NewMemory(store.Options{}))
	var l *priors.Learner
	if learn {
		l = priors.New(store.NewMemory(store.Options{}), nil, nil)
		route, err := l.Track("chat", priors.Config{Curve: []float64{0.75, 1}, HalfLife: time.Hour, MaxDomains: 10, PriorWeight: 8})
		if err != nil {
			t.Fatal(err)
		}
		route.Domain("acme", "web", 0xab).Routed(true)
		for range 5 {
			l.Rate("chat", "acme", "web", 0xab, 0.5, 0, "judge")
		}
		l.Refresh(context.Background())
	}
	f, err := New(policy.FilterRef{Name: "admin"}, filters.Deps{
		Policy: r.p, Route: r.p.Routes[0], Store: r.st, Priors: l,
		Logger: slog.New(slog.NewJSONHandler(&r.trail, nil)), Audit: audit.New(&r.trail, "test"),
	})
	if err != nil {
		t.Fatal(err)
	}
	r.f = f
	return r
}

// TestDomains lists a tenant's learnt domains and resets one, which is
// audited; bad resets name the field.
func TestDomains(t *testing.T) {
	r := domainsRig(t, true)
	verdicts := func() float64 {
		status, body := r.call(http.MethodGet, "/admin/domains?route=chat&tenant=acme", "")
		data, _ := body["data"].([]any)
		if status != http.StatusOK || len(data) != 1 {
			t.Fatalf("list: %d %v", status, body)
		}
		d := data[0].(map[string]any)
		if d["app"] != "web" || d["domain"] != "00000000000000ab" {
			t.Errorf("listed %v", d)
		}
		return d["verdicts"].(float64)
	}
	if v := verdicts(); v != 5 {
		t.Fatalf("verdicts before the reset %v, want 5", v)
	}
	if status, body := r.call(http.MethodDelete, "/admin/domains/00000000000000ab?route=chat&tenant=acme&app=web", ""); status != http.StatusOK || body["reset"] != true {
		t.Fatalf("reset: %d %v", status, body)
	}
	if v := verdicts(); v != 0 {
		t.Errorf("verdicts after the reset %v, want 0", v)
	}
	if !strings.Contains(r.trail.String(), `"action":"domain.reset"`) {
		t.Errorf("the reset is not in the audit trail:\n%s", r.trail.String())
	}
	tests := []struct {
		name, target string
		status       int
		code         string
	}{
		{"a route that does not learn", "/admin/domains/00000000000000ab?route=embeddings&tenant=acme&app=web", 404, "route_not_learning"},
		{"not a fingerprint", "/admin/domains/xyz?route=chat&tenant=acme&app=web", 400, "invalid_domain"},
		{"no tenant", "/admin/domains/00000000000000ab?route=chat&app=web", 400, "invalid_domain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if status, body := r.call(http.MethodDelete, tt.target, ""); status != tt.status || errCode(body) != tt.code {
				t.Errorf("got %d %v, want %d %s", status, body, tt.status, tt.code)
			}
		})
	}
	t.Run("a gateway that learns nothing", func(t *testing.T) {
		if status, body := domainsRig(t, false).call(http.MethodGet, "/admin/domains", ""); status != 503 || errCode(body) != "learning_unavailable" {
			t.Errorf("got %d %v, want 503 learning_unavailable", status, body)
		}
	})
}
