package router

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/state/sticky"
)

// fakeProbes fails the capabilities listed per provider/model.
type fakeProbes map[string]policy.Capability

func (f fakeProbes) Failing(provider, model string) policy.Capability { return f[provider+"/"+model] }

// TestProbesRouteAround: a deployment whose probe of a capability fails
// is skipped by the requests that need it, and serves the others.
func TestProbesRouteAround(t *testing.T) {
	t.Parallel()
	const tools = `{"model":%q,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}]}`
	tests := []struct {
		name       string
		failing    fakeProbes
		body       string
		wantPlan   string
		wantReason string
		wantStatus int
	}{
		{name: "a tool request skips a named model failing tools", failing: fakeProbes{"oa/strong": policy.CapTools},
			body: fmt.Sprintf(tools, "strong"), wantPlan: "mid", wantReason: "skipped strong (probe failing: tools)"},
		{name: "a request without tools still reaches it", failing: fakeProbes{"oa/strong": policy.CapTools},
			body: userMsg("strong", "hi"), wantPlan: "strong,mid", wantReason: "model named by the client"},
		{name: "a stream skips a model failing its stream probe", failing: fakeProbes{"oa/strong": policy.CapStream},
			body: `{"model":"strong","stream":true,"messages":[{"role":"user","content":"hi"}]}`, wantPlan: "mid", wantReason: "probe failing: streaming"},
		{name: "a failure of a capability the request does not need", failing: fakeProbes{"oa/strong": policy.CapVision | policy.CapJSON},
			body: fmt.Sprintf(tools, "strong"), wantPlan: "strong,mid"},
		{name: "auto routing skips it too", failing: fakeProbes{"local/llama": policy.CapTools},
			body: fmt.Sprintf(tools, "auto"), wantPlan: "mid,strong", wantReason: "skipped llama (probe failing: tools)"},
		{name: "the same name on another provider is not the deployment failing", failing: fakeProbes{"an/strong": policy.CapTools},
			body: fmt.Sprintf(tools, "strong"), wantPlan: "strong,mid"},
		{name: "no model left that can", failing: fakeProbes{"an/mid": policy.CapTools},
			body: fmt.Sprintf(tools, "mid"), wantStatus: http.StatusServiceUnavailable},
	}
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(fmt.Sprintf(testPolicy, "false"))}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := NewRouter(p, p.Routes[0], fakeHealth{}, sticky.New(100, time.Now), WithProbes(tt.failing))
			if err != nil {
				t.Fatal(err)
			}
			d, e := r.Decide(&Query{Chat: chat(t, tt.body), Hash: 42})
			if tt.wantStatus != 0 {
				if e == nil || e.Status != tt.wantStatus {
					t.Fatalf("got %v (plan %s), want %d", e, names(d.Plan), tt.wantStatus)
				}
				return
			}
			if e != nil {
				t.Fatalf("unexpected refusal: %v", e)
			}
			if got := names(d.Plan); got != tt.wantPlan || !strings.Contains(d.Reason, tt.wantReason) {
				t.Errorf("plan %s (%s), want %s with %q", got, d.Reason, tt.wantPlan, tt.wantReason)
			}
		})
	}
}

// TestProbesRouteHybridAround: a hybrid request calls only the models
// whose probes pass what it needs.
func TestProbesRouteHybridAround(t *testing.T) {
	t.Parallel()
	y := strings.Replace(testPolicy, "    attempts: 3\n", "    attempts: 3\n    hybrid: {models: [strong, mid], pick: first}\n", 1)
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(fmt.Sprintf(y, "false"))}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, body, wantPlan string
	}{
		{name: "a tool request leaves out the model failing tools",
			body: `{"model":"hybrid","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}]}`, wantPlan: "mid"},
		{name: "a request without tools calls both", body: userMsg("hybrid", "hi"), wantPlan: "strong,mid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := NewRouter(p, p.Routes[0], fakeHealth{}, nil, WithProbes(fakeProbes{"oa/strong": policy.CapTools}))
			if err != nil {
				t.Fatal(err)
			}
			f := &Filter{router: r, health: fakeHealth{}, log: slog.New(slog.DiscardHandler)}
			x := &filters.Exchange{ID: "rid", Policy: p, Route: p.Routes[0], Chat: chat(t, tt.body)}
			if err := f.RequestBody(context.Background(), x); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tg := range x.Plan {
				got = append(got, tg.Model.Name)
			}
			if strings.Join(got, ",") != tt.wantPlan {
				t.Errorf("plan %v (%s), want %s", got, x.RouteReason, tt.wantPlan)
			}
		})
	}
}
