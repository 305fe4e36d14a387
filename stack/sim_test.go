package stack

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/configs/policy"
)

// TestStartSimScriptAndRecord: Options.Script reaches the simulators (a
// prompt that asks for no tool gets text, not a call to the first tool)
// and Options.SimRecordDir makes them record.
func TestStartSimScriptAndRecord(t *testing.T) {
	const request = `{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"say hi"}],"tools":[{"name":"Agent","input_schema":{"type":"object"}}]}`
	tests := []struct {
		script bool
		want   string // the reply's first content block type
	}{
		{script: true, want: "text"},
		{script: false, want: "tool_use"},
	}
	for _, tt := range tests {
		t.Run("script="+map[bool]string{true: "on", false: "off"}[tt.script], func(t *testing.T) {
			dir := t.TempDir()
			p := &policy.Policy{Providers: []*policy.Provider{{Name: "anthropic", Kind: policy.KindAnthropic}}}
			s := &Stack{}
			if err := s.startSim(t.Context(), p, Options{Simulate: SimulateAll, Script: tt.script, SimRecordDir: dir}); err != nil {
				t.Fatal(err)
			}
			defer s.Sim.Close()
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.Sim.URL("anthropic")+"/v1/messages", strings.NewReader(request))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("anthropic-version", "2023-06-01")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var m struct {
				Content []struct {
					Type string `json:"type"`
				} `json:"content"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || len(m.Content) == 0 {
				t.Fatalf("reply %+v, %v", m, err)
			}
			if m.Content[0].Type != tt.want {
				t.Errorf("got a %s block, want %s", m.Content[0].Type, tt.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "anthropic", "000.json")); err != nil {
				t.Errorf("the request was not recorded: %v", err)
			}
		})
	}
}

// TestStartSimFreePorts: SimulatePolicyFreePorts starts a simulator for
// each provider the policy marks simulated, and only those, on a free port
// rather than the base_url's, which make run's stack may hold.
func TestStartSimFreePorts(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	port := held.Addr().(*net.TCPAddr).Port
	p := &policy.Policy{Providers: []*policy.Provider{
		{Name: "anthropic", Kind: policy.KindAnthropic, Host: "127.0.0.1", Port: port, Simulated: true},
		{Name: "openai", Kind: policy.KindOpenAI, Host: "api.openai.example", Port: 443},
	}}
	s := &Stack{}
	if err := s.startSim(t.Context(), p, Options{Simulate: SimulatePolicyFreePorts}); err != nil {
		t.Fatalf("a simulator took the base_url's port, held by another stack: %v", err)
	}
	defer s.Sim.Close()
	if got := s.Sim.Names(); !slices.Equal(got, []string{"anthropic"}) {
		t.Errorf("simulated %v, want only the provider marked simulated", got)
	}
	if a := s.Sim.Addr("anthropic"); a == "" || a == held.Addr().String() {
		t.Errorf("anthropic's simulator is at %q, want a free port", a)
	}
}
