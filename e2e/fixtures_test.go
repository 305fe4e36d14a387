package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/apischema/jsonform"
	"github.com/switchyard/switchyard/apischema/responsesapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/stack"
	"github.com/switchyard/switchyard/state/ledger"
)

// fixtureDir holds what real clients sent (make clients-capture): one
// folder per client run, <client>-<version>[-say-hi]/NNN.json, each
// request in the simulators' record format.
var fixtureDir = filepath.Join("testdata", "clients")

// fixture is one request a real client sent, as the simulators' recording
// mode writes it: credentials redacted, the body's JSON kept as sent but
// for its whitespace.
type fixture struct {
	name    string            // <client run>/NNN.json
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Headers map[string]string `json:"headers"`
	Body    json.RawMessage   `json:"body"`
}

func loadFixture(t *testing.T, name string) fixture {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, name))
	if err != nil {
		t.Fatal(err)
	}
	f := fixture{name: name}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return f
}

// body is the request's body, compact.
func (f fixture) body(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, f.Body); err != nil {
		t.Fatalf("%s: body: %v", f.name, err)
	}
	return b.Bytes()
}

// withModel is the body with its model member replaced.
func (f fixture) withModel(t *testing.T, model string) []byte {
	t.Helper()
	b, err := jsonform.ReplaceMember(f.body(t), "model", strconv.Quote(model))
	if err != nil {
		t.Fatalf("%s: %v", f.name, err)
	}
	return b
}

// api is the gateway API of the fixture's path.
func (f fixture) api() policy.API {
	path, _, _ := strings.Cut(f.Path, "?")
	switch path {
	case "/v1/chat/completions":
		return policy.APIChatCompletions
	case "/v1/messages":
		return policy.APIMessages
	case "/v1/messages/count_tokens":
		return policy.APICountTokens
	case "/v1/responses":
		return policy.APIResponses
	}
	return ""
}

// replayed is what a replayed request got. A stream's events are listed by
// type (a Chat Completions chunk by "chunk", its end by "[DONE]"),
// repeats of one type folded, with the data of the last; a whole answer
// is its body.
type replayed struct {
	status int
	id     string
	header http.Header
	events []string
	last   json.RawMessage
	body   []byte
}

// send sends body as the client sent its request, with its headers (but
// those of its own connection), its redacted credential replaced by the
// demo key, and reads the answer to its end, failing t unless a
// Responses stream's events are numbered 0, 1, 2….
func (f fixture) send(t *testing.T, s *stack.Stack, body []byte) replayed {
	t.Helper()
	req, _ := http.NewRequest(f.Method, s.URL+f.Path, bytes.NewReader(body))
	for k, v := range f.Headers {
		switch strings.ToLower(k) {
		case "host", "content-length", "connection":
		case "authorization":
			req.Header.Set(k, "Bearer "+demoKey)
		case "x-api-key":
			req.Header.Set(k, demoKey)
		default:
			if v != "<redacted>" {
				req.Header.Set(k, v)
			}
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	a := replayed{status: resp.StatusCode, id: resp.Header.Get("X-Request-Id"), header: resp.Header}
	if enc := resp.Header.Get("Content-Encoding"); enc != "" && enc != "identity" {
		t.Fatalf("%s: the answer is %s-encoded; the replay reads plain answers only", f.name, enc)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") || resp.StatusCode != http.StatusOK {
		if a.body, err = io.ReadAll(resp.Body); err != nil {
			t.Fatal(err)
		}
		return a
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<22)
	seq := 0.0
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue
		}
		data = strings.TrimSpace(data)
		typ := "[DONE]"
		if data != "[DONE]" {
			var ev struct {
				Type string   `json:"type"`
				Seq  *float64 `json:"sequence_number"`
			}
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatalf("%s: event %q: %v", f.name, data, err)
			}
			if typ = ev.Type; typ == "" {
				typ = "chunk"
			}
			if ev.Seq != nil {
				if *ev.Seq != seq {
					t.Fatalf("%s: event %s numbered %v, want %v", f.name, ev.Type, *ev.Seq, seq)
				}
				seq++
			}
			a.last = json.RawMessage(data)
		}
		if n := len(a.events); n == 0 || a.events[n-1] != typ {
			a.events = append(a.events, typ)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: reading the stream: %v", f.name, err)
	}
	return a
}

// streamEnd is the event each API's stream ends with.
var streamEnd = map[policy.API]string{
	policy.APIChatCompletions: "[DONE]", policy.APIMessages: "message_stop", policy.APIResponses: "response.completed",
}

// answered fails t unless a is a 200 whose stream ran to its API's end
// event, or whose whole answer is that API's object.
func (a replayed) answered(t *testing.T, f fixture) {
	t.Helper()
	if a.status != http.StatusOK {
		t.Fatalf("%s: status %d: %s", f.name, a.status, a.body)
	}
	if a.events != nil {
		if want := streamEnd[f.api()]; a.events[len(a.events)-1] != want {
			t.Fatalf("%s: the stream ended with %v, not %s", f.name, a.events, want)
		}
		return
	}
	var obj struct {
		Object      string `json:"object"`
		Type        string `json:"type"`
		InputTokens *int   `json:"input_tokens"`
	}
	if err := json.Unmarshal(a.body, &obj); err != nil {
		t.Fatalf("%s: the answer %q is not JSON: %v", f.name, a.body, err)
	}
	ok := map[policy.API]bool{
		policy.APIChatCompletions: obj.Object == "chat.completion", policy.APIResponses: obj.Object == "response",
		policy.APIMessages: obj.Type == "message", policy.APICountTokens: obj.InputTokens != nil,
	}[f.api()]
	if !ok {
		t.Fatalf("%s: the answer is not a %s answer: %s", f.name, f.api(), a.body)
	}
}

// nativeKind is the provider kind that speaks an API as it is: the
// gateway passes such requests through.
var nativeKind = map[policy.API]policy.Kind{
	policy.APIChatCompletions: policy.KindOpenAI, policy.APIResponses: policy.KindOpenAI,
	policy.APIMessages: policy.KindAnthropic, policy.APICountTokens: policy.KindAnthropic,
}

// received is the body the provider got for the request the gateway
// answered under id (Envoy passes x-request-id upstream).
func received(t *testing.T, s *stack.Stack, provider, id string) []byte {
	t.Helper()
	st, err := s.Sim.Stats(provider)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range slices.Backward(st.Recent) {
		if r.Header.Get("X-Request-Id") == id {
			return []byte(r.Body)
		}
	}
	t.Fatalf("%s got no request %s among its last %d", provider, id, len(st.Recent))
	return nil
}

// rewrittenOnly fails t unless got, the body the provider received, is
// sent byte for byte but for the members the gateway owns: the model,
// named as the provider knows it, and the output cap, the client's held
// to the model's or, where the client set none, the model's default
// (which the budget reserved for), each written where the client put it
// or added at the end; in a Chat Completions stream, stream_options
// with include_usage on (the gateway counts every streamed token); and,
// on the Responses API with a web search tool, max_tool_calls, the
// searches the reservation covers.
func rewrittenOnly(t *testing.T, f fixture, m *policy.Model, sent, got []byte) {
	t.Helper()
	var sentMembers map[string]json.RawMessage
	if err := json.Unmarshal(sent, &sentMembers); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(got))
	if _, err := dec.Token(); err != nil {
		t.Fatalf("%s: the provider got %q: %v", f.name, got, err)
	}
	want := sent
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		name := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		switch name {
		case "model":
			if string(v) != strconv.Quote(m.Upstream) {
				t.Errorf("%s: the provider was asked for model %s, want %q", f.name, v, m.Upstream)
			}
		case "max_tokens", "max_completion_tokens", "max_output_tokens":
			n, err := strconv.Atoi(string(v))
			asked, askedErr := strconv.Atoi(string(sentMembers[name]))
			switch {
			case err != nil || n <= 0 || n > m.MaxOutputTokens:
				t.Errorf("%s: %s is %s, want at most the model's cap %d", f.name, name, v, m.MaxOutputTokens)
			case askedErr == nil && n != min(asked, m.MaxOutputTokens):
				t.Errorf("%s: %s is %d, the client asked for %d and the model's cap is %d", f.name, name, n, asked, m.MaxOutputTokens)
			}
		case "max_tool_calls":
			n, err := strconv.Atoi(string(v))
			asked, askedErr := strconv.Atoi(string(sentMembers[name]))
			if err != nil || f.api() != policy.APIResponses || (askedErr == nil && n != asked) || (askedErr != nil && n != responsesapi.DefaultMaxToolCalls) {
				t.Errorf("%s: max_tool_calls %s; want the client's, else %d", f.name, v, responsesapi.DefaultMaxToolCalls)
			}
		case "stream_options":
			var o struct {
				IncludeUsage bool `json:"include_usage"`
			}
			if json.Unmarshal(v, &o) != nil || !o.IncludeUsage || f.api() != policy.APIChatCompletions {
				t.Errorf("%s: stream_options %s", f.name, v)
			}
		default:
			continue
		}
		if want, err = jsonform.SetMember(want, name, string(v)); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s: the provider did not get the client's body but for the gateway's members:\n got %s\nwant %s", f.name, truncate(string(got), 2000), truncate(string(want), 2000))
	}
}

// TestClientFixturesEveryKind replays every request a real client sent
// (testdata/clients, captured with make clients-capture: Claude Code and
// Codex sessions with a tool call, streamed; the Vercel AI SDK,
// LangChain, the OpenAI Agents SDK, the Anthropic and OpenAI SDKs, each a
// tool round trip and a stream) through the gateway to a model of every
// provider kind, its model member replaced. Each is answered, a stream to
// its end event, and is a priced ledger row of its route, the demo
// tenant and the model's provider. Where the provider speaks the client's
// API, it gets the client's body byte for byte but for the members the
// gateway owns; where the gateway translates, the provider's simulator
// checks the request against the target's own rules.
func TestClientFixturesEveryKind(t *testing.T) {
	t.Parallel()
	names, err := filepath.Glob(filepath.Join(fixtureDir, "*", "*.json"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no fixtures in %s: %v", fixtureDir, err)
	}
	p, err := policy.Load(shared.PolicyDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, model := range []string{"gpt-4o-mini", "claude-3-5-haiku", "gemini-2.0-flash"} {
		m := slices.IndexFunc(p.Models, func(m *policy.Model) bool { return m.Name == model })
		if m < 0 {
			t.Fatalf("the shared stack serves no %s", model)
		}
		t.Run(model, func(t *testing.T) {
			t.Parallel()
			replayFixtures(t, p, p.Models[m], names)
		})
	}
}

// replayFixtures replays the fixtures to one model, one at a time (the
// simulator keeps only its last requests to compare with).
func replayFixtures(t *testing.T, p *policy.Policy, m *policy.Model, names []string) {
	type sent struct {
		name, id string
		api      policy.API
	}
	var all []sent
	for _, path := range names {
		rel, _ := filepath.Rel(fixtureDir, path)
		t.Run(rel, func(t *testing.T) {
			f := loadFixture(t, rel)
			if f.api() == "" || f.Method != http.MethodPost {
				t.Fatalf("%s %s is not a model call", f.Method, f.Path)
			}
			body := f.withModel(t, m.Name)
			a := f.send(t, shared, body)
			a.answered(t, f)
			all = append(all, sent{rel, a.id, f.api()})
			if p := a.header.Get("X-Switchyard-Provider"); p != m.Provider.Name {
				t.Errorf("served by %q, want %s", p, m.Provider.Name)
			}
			if nativeKind[f.api()] == m.Provider.Kind {
				rewrittenOnly(t, f, m, body, received(t, shared, m.Provider.Name, a.id))
			}
		})
	}
	var rows map[string]ledger.Record
	if err := eventually(15*time.Second, func() error {
		rows = ledgerRecords(t, shared)
		for _, r := range all {
			if _, ok := rows[r.id]; !ok {
				return errNotYet
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("the replays never all reached the ledger: %v", err)
	}
	for _, r := range all {
		row := rows[r.id]
		route := p.Routes[slices.IndexFunc(p.Routes, func(rt *policy.Route) bool { return rt.API == r.api })].Name
		free := r.api == policy.APICountTokens
		if row.Route != route || row.Tenant != "demo" || row.App != "demo" || row.Provider != m.Provider.Name ||
			row.ServedModel != m.Name || row.Status != http.StatusOK || (row.CostMicros > 0) == free {
			t.Errorf("%s: ledger row %+v; want a %s row of demo/demo served by %s, priced", r.name, row, route, m.Provider.Name)
		}
	}
}
