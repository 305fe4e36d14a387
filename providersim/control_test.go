package providersim_test

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/providersim"
)

func TestControlAPI(t *testing.T) {
	sim, sleeps := startSim(t, providersim.ProviderConfig{Name: "oa", Kind: providersim.KindOpenAI})
	ctl := sim.ControlURL()
	chat := kindCalls[providersim.KindOpenAI].plain
	steps := []struct {
		name       string
		call       call
		wantStatus int
		wantBody   string // substring
	}{
		{"set a counted latency fault", call{path: "/control/oa/fault", body: `{"mode":"latency","delay":"250ms","count":1}`}, 204, ""},
		{"unknown provider", call{path: "/control/nope/fault", body: `{"mode":"down"}`}, 404, `unknown provider \"nope\"`},
		{"not JSON", call{path: "/control/oa/fault", body: `{"mode":`}, 400, "invalid fault JSON"},
		{"unknown field", call{path: "/control/oa/fault", body: `{"mode":"latency","delay":"1s","sleep":"1s"}`}, 400, `unknown field \"sleep\"`},
		{"duration as a number", call{path: "/control/oa/fault", body: `{"mode":"latency","delay":250}`}, 400, "duration must be a string"},
		{"invalid fault", call{path: "/control/oa/fault", body: `{"mode":"status"}`}, 400, "status 0"},
		{"stats of an unknown provider", call{method: "GET", path: "/control/nope/stats"}, 404, "unknown provider"},
		{"clear on an unknown provider", call{method: "DELETE", path: "/control/nope/fault"}, 404, "unknown provider"},
	}
	for _, s := range steps {
		resp, body := do(t, ctl, s.call)
		if resp.StatusCode != s.wantStatus || !strings.Contains(body, s.wantBody) {
			t.Errorf("%s: got %d %s, want %d with %q", s.name, resp.StatusCode, body, s.wantStatus, s.wantBody)
		}
	}
	// The latency fault set first applies to exactly one request.
	do(t, sim.URL("oa"), chat)
	do(t, sim.URL("oa"), chat)
	if diff := cmp.Diff([]time.Duration{250 * time.Millisecond}, sleeps.delays()); diff != "" {
		t.Errorf("delays mismatch (-want +got):\n%s", diff)
	}

	resp, body := do(t, ctl, call{method: "GET", path: "/control/oa/stats"})
	var st providersim.Stats
	if err := json.Unmarshal([]byte(body), &st); err != nil || resp.StatusCode != 200 {
		t.Fatalf("stats: got %d %s (%v)", resp.StatusCode, body, err)
	}
	if st.Requests != 2 || st.ByStatus[200] != 2 || len(st.Recent) != 2 {
		t.Errorf("got stats %+v, want 2 requests answered 200 and both recorded", st)
	}

	do(t, ctl, call{path: "/control/oa/fault", body: `{"mode":"down"}`})
	if _, _, err := tryDo(t, sim.URL("oa"), chat); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("after down: got %v, want connection refused", err)
	}
	if resp, _ := do(t, ctl, call{method: "DELETE", path: "/control/oa/fault"}); resp.StatusCode != 204 {
		t.Errorf("clear: got %d, want 204", resp.StatusCode)
	}
	if resp, _ := do(t, sim.URL("oa"), chat); resp.StatusCode != 200 {
		t.Errorf("after clearing down: got %d, want 200", resp.StatusCode)
	}

	do(t, ctl, call{path: "/control/oa/fault", body: `{"mode":"down"}`})
	if resp, _ := do(t, ctl, call{path: "/control/reset"}); resp.StatusCode != 204 {
		t.Errorf("reset: got %d, want 204", resp.StatusCode)
	}
	if resp, _ := do(t, sim.URL("oa"), chat); resp.StatusCode != 200 {
		t.Errorf("after reset: got %d, want 200 (reset brings providers up)", resp.StatusCode)
	}
	st, _ = sim.Stats("oa")
	if st.Requests != 1 {
		t.Errorf("got %d requests after reset and one call, want 1", st.Requests)
	}
}

func TestStats(t *testing.T) {
	sim, err := providersim.Start(t.Context(), providersim.Config{
		Providers: []providersim.ProviderConfig{{Name: "an", Kind: providersim.KindAnthropic, ExpectKey: "provider-key"}},
		History:   2,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	if sim.ControlURL() != "" {
		t.Errorf("got control URL %q without ControlAddr, want none", sim.ControlURL())
	}
	msg := kindCalls[providersim.KindAnthropic].plain
	withKey := func(key string) call {
		c := msg
		c.header = map[string]string{"anthropic-version": "2023-06-01", "x-api-key": key}
		return c
	}
	do(t, sim.URL("an"), withKey("client-key"))
	do(t, sim.URL("an"), withKey("provider-key"))
	do(t, sim.URL("an"), withKey("provider-key"))
	do(t, sim.URL("an"), call{method: "GET", path: "/v1/files", header: map[string]string{"x-api-key": "provider-key"}})
	st, err := sim.Stats("an")
	if err != nil {
		t.Fatal(err)
	}
	// "one two three" is 13 characters: 4 tokens plus 3 for the message;
	// the reply has 6 words. Rejected requests serve no tokens.
	want := providersim.Stats{
		Requests:         4,
		ByPath:           map[string]int{"/v1/messages": 3, "/v1/files": 1},
		ByStatus:         map[int]int{401: 1, 200: 2, 404: 1},
		PromptTokens:     14,
		CompletionTokens: 12,
	}
	got := st
	got.Recent = nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stats mismatch (-want +got):\n%s", diff)
	}
	var recent []string
	for _, r := range st.Recent {
		recent = append(recent, r.Method+" "+r.Path+" "+r.Header.Get("x-api-key"))
	}
	if diff := cmp.Diff([]string{"POST /v1/messages provider-key", "GET /v1/files provider-key"}, recent); diff != "" {
		t.Errorf("recent requests mismatch (-want +got):\n%s", diff)
	}
	if st.Recent[0].Body != msg.body {
		t.Errorf("got recorded body %q, want %q", st.Recent[0].Body, msg.body)
	}
	if err := sim.Reset(); err != nil {
		t.Fatal(err)
	}
	if st, _ := sim.Stats("an"); st.Requests != 0 || len(st.ByPath) != 0 || len(st.Recent) != 0 {
		t.Errorf("got %+v after Reset, want empty stats", st)
	}
}

func TestStartRejects(t *testing.T) {
	tests := []struct {
		name    string
		cfg     providersim.Config
		wantErr string
	}{
		{"empty name", providersim.Config{Providers: []providersim.ProviderConfig{{Kind: providersim.KindOpenAI}}}, "name must not be empty"},
		{"duplicate name", providersim.Config{Providers: []providersim.ProviderConfig{{Name: "a", Kind: providersim.KindOpenAI}, {Name: "a", Kind: providersim.KindGemini}}}, "duplicate name"},
		{"unknown kind", providersim.Config{Providers: []providersim.ProviderConfig{{Name: "a", Kind: "bedrock"}}}, `unknown kind "bedrock"`},
		{"bad address", providersim.Config{Providers: []providersim.ProviderConfig{{Name: "a", Kind: providersim.KindOpenAI, Addr: "127.0.0.1:notaport"}}}, "provider a"},
		{"bad control address", providersim.Config{ControlAddr: "nowhere:-1"}, "control listener"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim, err := providersim.Start(t.Context(), tt.cfg)
			if err == nil {
				sim.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("got %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestShutdownWaitsAndCloses(t *testing.T) {
	sim, err := providersim.Start(t.Context(), providersim.Config{
		Providers: []providersim.ProviderConfig{{Name: "oa", Kind: providersim.KindOpenAI}},
	})
	if err != nil {
		t.Fatal(err)
	}
	base := sim.URL("oa")
	if err := sim.Shutdown(t.Context()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if _, _, err := tryDo(t, base, kindCalls[providersim.KindOpenAI].plain); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("after Shutdown: got %v, want connection refused", err)
	}
	if err := sim.ClearFault("oa"); err == nil {
		t.Errorf("ClearFault after Shutdown reopened the listener, want an error")
	}
}

// TestConcurrentRequests checks that a counted fault fails exactly Count
// requests however they interleave, and that Stats sees every request.
func TestConcurrentRequests(t *testing.T) {
	sim, _ := startKind(t, providersim.KindOpenAI)
	setFault(t, sim, "openai", providersim.Fault{Mode: providersim.FaultStatus, Status: 500, Count: 5})
	const workers, each = 8, 10
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				resp, _, err := tryDo(t, sim.URL("openai"), kindCalls[providersim.KindOpenAI].plain)
				if err != nil {
					t.Errorf("request: %v", err)
					return
				}
				if resp.StatusCode != 200 && resp.StatusCode != 500 {
					t.Errorf("got status %d, want 200 or 500", resp.StatusCode)
				}
			}
		})
	}
	wg.Wait()
	st, _ := sim.Stats("openai")
	want := providersim.Stats{
		Requests: workers * each,
		ByPath:   map[string]int{"/v1/chat/completions": workers * each},
		ByStatus: map[int]int{500: 5, 200: workers*each - 5},
		// Each served reply: 7 prompt and 6 completion tokens.
		PromptTokens:     7 * (workers*each - 5),
		CompletionTokens: 6 * (workers*each - 5),
	}
	st.Recent = nil
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("stats mismatch (-want +got):\n%s", diff)
	}
}
