package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/providersim"
	"github.com/switchyard/switchyard/stack"
	"github.com/switchyard/switchyard/state/ledger/report"
)

// cachedRoutes is the shipped routes.yaml with the response cache on the
// chat route: answers fresh for ttl, kept an hour more for degraded mode,
// with more arguments when more is set (", tenants: [team]").
func cachedRoutes(t *testing.T, ttl, more string) string {
	t.Helper()
	root, _ := stack.ModuleRoot()
	b, err := os.ReadFile(filepath.Join(root, "configs", "local", "routes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const plain = "filters: [auth, router, quota, translate, usage]"
	if !strings.Contains(string(b), plain) {
		t.Fatalf("configs/local/routes.yaml no longer has %q", plain)
	}
	cached := "filters: [auth, router, quota, {name: cache, args: {ttl: " + ttl + ", memory_ttl: 1s, stale_for: 1h" + more + "}}, translate, usage]"
	return strings.Replace(string(b), plain, cached, 1) // the first route is chat
}

func cacheBody(text string, extra string) string {
	return `{"model":"gpt-4o-mini","temperature":0,"max_tokens":20` + extra + `,"messages":[{"role":"user","content":"` + text + `"}]}`
}

func postCached(t *testing.T, s *stack.Stack, key, body string, header ...string) answer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := fresh.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: buf.Bytes()}
}

// sseText is the text a chat completion stream spelt out, whether it
// ended with [DONE], and whether it carried a usage chunk with tokens.
func sseText(t *testing.T, body []byte) (text string, done, usage bool) {
	t.Helper()
	var b strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			done = true
			continue
		}
		var ch struct {
			Object  string
			Choices []struct{ Delta struct{ Content string } }
			Usage   *struct {
				CompletionTokens int `json:"completion_tokens"`
			}
		}
		if err := json.Unmarshal([]byte(line), &ch); err != nil || ch.Object != "chat.completion.chunk" {
			t.Fatalf("not a chunk: %s", line)
		}
		for _, c := range ch.Choices {
			b.WriteString(c.Delta.Content)
		}
		usage = usage || (ch.Usage != nil && ch.Usage.CompletionTokens > 0)
	}
	return b.String(), done, usage
}

func content(t *testing.T, a answer) string {
	t.Helper()
	var c struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(a.body, &c); err != nil || len(c.Choices) == 0 {
		t.Fatalf("not a completion: %d %s", a.status, a.body)
	}
	return c.Choices[0].Message.Content
}

// TestResponseCache: two replicas share one Redis. A deterministic request
// is a miss, then a hit on either replica (memory or Redis) with the same
// answer, also as SSE for a streamed request; a hit is a ledger row of the
// provider "cache" at zero cost that saved what the miss cost, and the
// tenant's usage API reports the savings; another tenant, a request that
// is not deterministic and a client that opts out all miss the cache.
func TestResponseCache(t *testing.T) {
	s := startStack(t, stack.Options{Replicas: 2, Overlay: map[string]string{"routes.yaml": cachedRoutes(t, "5m", "")}})
	body := cacheBody("what does a cache keep?", "")

	first := postCached(t, s, demoKey, body)
	if first.status != http.StatusOK || first.header.Get("x-switchyard-cache") != "miss" || first.header.Get("x-switchyard-provider") != "openai" {
		t.Fatalf("first: %d x-cache %q provider %q: %s", first.status, first.header.Get("x-switchyard-cache"), first.header.Get("x-switchyard-provider"), first.body)
	}
	want := content(t, first)
	missReplica := replicaOf(t, s, first.header.Get("X-Request-Id"))

	// Fresh connections spread the next requests over both replicas: the
	// other one can only hit through Redis.
	var hitIDs []string
	otherHit := false
	for i := 0; i < 40 && (!otherHit || len(hitIDs) < 3); i++ {
		a := postCached(t, s, demoKey, strings.Replace(body, `"temperature":0`, `"temperature": 0`, 1)) // spacing is no difference
		if a.status != http.StatusOK || a.header.Get("x-switchyard-cache") != "hit" {
			t.Fatalf("repeat %d: %d x-cache %q: %s", i, a.status, a.header.Get("x-switchyard-cache"), a.body)
		}
		if got := content(t, a); got != want || a.header.Get("x-switchyard-model") != "gpt-4o-mini" || a.header.Get("x-switchyard-provider") != "" {
			t.Fatalf("hit: %q by %q/%q; want %q by gpt-4o-mini and no provider", got, a.header.Get("x-switchyard-model"), a.header.Get("x-switchyard-provider"), want)
		}
		id := a.header.Get("X-Request-Id")
		hitIDs = append(hitIDs, id)
		if replicaOf(t, s, id) != missReplica {
			otherHit = true
		}
	}
	if !otherHit {
		t.Errorf("no hit was served by the replica that did not see the miss: the Redis layer is not shared")
	}

	// Streamed: the same answer as SSE, from the cache.
	st := postCached(t, s, demoKey, strings.Replace(body, `"max_tokens":20`, `"max_tokens":20,"stream":true,"stream_options":{"include_usage":true}`, 1))
	if st.status != http.StatusOK || st.header.Get("x-switchyard-cache") != "hit" || !strings.HasPrefix(st.header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("streamed: %d x-cache %q content-type %q: %s", st.status, st.header.Get("x-switchyard-cache"), st.header.Get("Content-Type"), st.body)
	}
	text, done, usage := sseText(t, st.body)
	if text != want || !done || !usage {
		t.Errorf("stream from the cache: %q, [DONE] %v, usage chunk %v; want %q, both", text, done, usage, want)
	}

	// A streamed answer is kept too: its repeat, streamed then whole, is a
	// hit with the text the stream spelt out. Only the streams are
	// repeated until one hits (the answer is stored once its exchange is
	// done, a moment after its client has it): a whole request sent sooner
	// would be a miss stored in its own right.
	streamed := cacheBody("does a stream stay?", `,"stream":true`)
	sm := postCached(t, s, demoKey, streamed)
	smText, smDone, _ := sseText(t, sm.body)
	if sm.status != http.StatusOK || sm.header.Get("x-switchyard-cache") != "miss" || sm.header.Get("x-switchyard-provider") != "openai" || smText == "" || !smDone {
		t.Fatalf("streamed miss: %d x-cache %q provider %q: %s", sm.status, sm.header.Get("x-switchyard-cache"), sm.header.Get("x-switchyard-provider"), sm.body)
	}
	var sh answer
	for i := 0; i < 5; i++ {
		if sh = postCached(t, s, demoKey, streamed); sh.header.Get("x-switchyard-cache") == "hit" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if shText, _, _ := sseText(t, sh.body); sh.header.Get("x-switchyard-cache") != "hit" || shText != smText {
		t.Fatalf("the streamed answer's streamed repeat: x-cache %q, %q; want a hit saying %q", sh.header.Get("x-switchyard-cache"), shText, smText)
	}
	wh := postCached(t, s, demoKey, cacheBody("does a stream stay?", ""))
	if wh.status != http.StatusOK || wh.header.Get("x-switchyard-cache") != "hit" || content(t, wh) != smText {
		t.Errorf("the streamed answer's repeat, whole: %d x-cache %q: %s; want a hit saying %q", wh.status, wh.header.Get("x-switchyard-cache"), wh.body, smText)
	}

	// Per tenant, deterministic only, and the client's opt-out.
	if a := postCached(t, s, "sk-local-team", body); a.header.Get("x-switchyard-cache") != "miss" {
		t.Errorf("another tenant's identical request: x-cache %q, want miss", a.header.Get("x-switchyard-cache"))
	}
	random := strings.Replace(body, `"temperature":0`, `"temperature":0.7`, 1)
	for range 2 {
		if a := postCached(t, s, demoKey, random); a.status != http.StatusOK || a.header.Get("x-switchyard-cache") != "" {
			t.Errorf("temperature 0.7: %d x-cache %q, want no cache", a.status, a.header.Get("x-switchyard-cache"))
		}
	}
	if a := postCached(t, s, demoKey, random, "X-Switchyard-Cache", "on"); a.header.Get("x-switchyard-cache") != "miss" {
		t.Errorf("temperature 0.7 asking for the cache: x-cache %q, want miss", a.header.Get("x-switchyard-cache"))
	}
	if a := postCached(t, s, demoKey, body, "X-Switchyard-Cache", "off"); a.header.Get("x-switchyard-cache") != "" || a.header.Get("x-switchyard-provider") != "openai" {
		t.Errorf("opting out: x-cache %q provider %q, want none and openai", a.header.Get("x-switchyard-cache"), a.header.Get("x-switchyard-provider"))
	}

	// Each replica flushes its own ledger writer: wait for both.
	ids := append(hitIDs, st.header.Get("X-Request-Id"), first.header.Get("X-Request-Id"), sm.header.Get("X-Request-Id"), sh.header.Get("X-Request-Id"), wh.header.Get("X-Request-Id"))
	rows := ledgerRecords(t, s)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		missing := 0
		for _, id := range ids {
			if _, ok := rows[id]; !ok {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		rows = ledgerRecords(t, s)
	}
	miss := rows[first.header.Get("X-Request-Id")]
	if miss.Provider != "openai" || miss.CostMicros == 0 || miss.SavedMicros != 0 {
		t.Errorf("the miss recorded as %+v; want openai at its cost, saving nothing", miss)
	}
	for _, id := range append(hitIDs, st.header.Get("X-Request-Id")) {
		r, ok := rows[id]
		if !ok {
			t.Errorf("hit %s has no ledger row", id)
			continue
		}
		if r.Provider != "cache" || r.ServedModel != "gpt-4o-mini" || r.CostMicros != 0 || r.OutputTokens == 0 || r.Status != http.StatusOK ||
			r.SavedMicros != miss.CostMicros {
			t.Errorf("hit %s recorded as %+v; want provider cache, gpt-4o-mini, zero cost, its tokens, saving the miss's %d", id, r, miss.CostMicros)
		}
	}

	streamedMiss, wholeHit := rows[sm.header.Get("X-Request-Id")], rows[wh.header.Get("X-Request-Id")]
	if streamedMiss.Provider != "openai" || streamedMiss.CostMicros == 0 || wholeHit.Provider != "cache" || wholeHit.CostMicros != 0 ||
		wholeHit.SavedMicros != streamedMiss.CostMicros || wholeHit.OutputTokens != streamedMiss.OutputTokens {
		t.Errorf("the streamed miss recorded as %+v, its whole repeat as %+v; want the repeat free, saving the stream's cost and tokens", streamedMiss, wholeHit)
	}

	// The tenant's own usage API reports what its hits saved.
	var saved int64
	for _, r := range rows {
		if r.Tenant == "demo" {
			saved += r.SavedMicros
		}
	}
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/v1/usage/by-model", nil)
	req.Header.Set("Authorization", "Bearer "+demoKey)
	resp, err := fresh.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rep report.Report
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/v1/usage/by-model: %d %v", resp.StatusCode, err)
	}
	var mini report.Row
	for _, row := range rep.Data {
		if row.Model == "gpt-4o-mini" {
			mini = row
		}
	}
	wantSaved := int64(len(hitIDs)+1)*miss.CostMicros + 2*streamedMiss.CostMicros // and the stream's two repeats
	if saved != wantSaved || rep.Total.SavedMicros != wantSaved || mini.SavedMicros != wantSaved || mini.SavedUSD != report.USD(wantSaved) {
		t.Errorf("/v1/usage/by-model: gpt-4o-mini saved %d (%s), total saved %d; the ledger's hits saved %d, want %d",
			mini.SavedMicros, mini.SavedUSD, rep.Total.SavedMicros, saved, wantSaved)
	}
}

// TestResponseCacheForNamedTenants: a route whose cache names its tenants
// caches for those only; another tenant's deterministic requests go to the
// provider every time, without X-Cache.
func TestResponseCacheForNamedTenants(t *testing.T) {
	s := startStack(t, stack.Options{Overlay: map[string]string{"routes.yaml": cachedRoutes(t, "5m", ", tenants: [team]")}})
	body := cacheBody("who is cached?", "")
	for i, want := range []string{"miss", "hit"} {
		a := postCached(t, s, "sk-local-team", body)
		for j := 0; want == "hit" && a.header.Get("x-switchyard-cache") == "miss" && j < 5; j++ {
			// the miss is stored once its exchange is done, a moment after its client has it
			time.Sleep(100 * time.Millisecond)
			a = postCached(t, s, "sk-local-team", body)
		}
		if a.status != http.StatusOK || a.header.Get("x-switchyard-cache") != want {
			t.Errorf("team's request %d: %d x-cache %q, want %s", i, a.status, a.header.Get("x-switchyard-cache"), want)
		}
	}
	for i := range 2 {
		if a := postCached(t, s, demoKey, body); a.status != http.StatusOK || a.header.Get("x-switchyard-cache") != "" || a.header.Get("x-switchyard-provider") != "openai" {
			t.Errorf("demo's request %d: %d x-cache %q provider %q; want no cache, openai", i, a.status, a.header.Get("x-switchyard-cache"), a.header.Get("x-switchyard-provider"))
		}
	}
}

// TestDegradedMode: once an answer's ttl has passed it is no longer
// served, but when every attempt fails — the providers answer 500, or all
// are down — it is, with x-switchyard-degraded: true; a request never answered
// before still gets the 503.
func TestDegradedMode(t *testing.T) {
	s := startStack(t, stack.Options{Overlay: map[string]string{"routes.yaml": cachedRoutes(t, "1s", "")}})
	body := cacheBody("degrade me gracefully", "")
	first := postCached(t, s, demoKey, body)
	if first.status != http.StatusOK || first.header.Get("x-switchyard-cache") != "miss" {
		t.Fatalf("first: %d x-cache %q: %s", first.status, first.header.Get("x-switchyard-cache"), first.body)
	}
	want := content(t, first)
	time.Sleep(2 * time.Second) // past the ttl
	if a := postCached(t, s, demoKey, body); a.header.Get("x-switchyard-cache") != "miss" || a.header.Get("x-switchyard-degraded") != "" {
		t.Fatalf("past the ttl with providers up: x-cache %q x-switchyard-degraded %q, want a miss", a.header.Get("x-switchyard-cache"), a.header.Get("x-switchyard-degraded"))
	}
	time.Sleep(2 * time.Second)

	for _, p := range []string{"openai", "anthropic", "gemini"} {
		if err := s.Sim.SetFault(p, providersim.Fault{Mode: providersim.FaultStatus, Status: 500}); err != nil {
			t.Fatal(err)
		}
	}
	a := postCached(t, s, demoKey, body)
	if a.status != http.StatusOK || a.header.Get("x-switchyard-degraded") != "true" || a.header.Get("x-switchyard-cache") != "stale" {
		t.Fatalf("every attempt failing: %d x-switchyard-degraded %q x-cache %q: %s", a.status, a.header.Get("x-switchyard-degraded"), a.header.Get("x-switchyard-cache"), a.body)
	}
	if got := content(t, a); got != want {
		t.Errorf("degraded answer %q, want the cached %q", got, want)
	}
	if n := a.header.Get("x-switchyard-fallback-count"); n == "" || n == "0" {
		t.Logf("x-switchyard-fallback-count %q", n)
	}
	// Streamed, the failed attempts' 500 becomes the stale answer as SSE.
	as := postCached(t, s, demoKey, strings.Replace(body, `"max_tokens":20`, `"max_tokens":20,"stream":true`, 1))
	if as.status != http.StatusOK || as.header.Get("x-switchyard-degraded") != "true" || !strings.HasPrefix(as.header.Get("Content-Type"), "text/event-stream") ||
		!strings.Contains(string(as.body), "data: [DONE]") {
		t.Errorf("every attempt failing, streamed: %d x-switchyard-degraded %q content-type %q: %s", as.status, as.header.Get("x-switchyard-degraded"), as.header.Get("Content-Type"), as.body)
	}
	if b := postCached(t, s, demoKey, cacheBody("never asked before", "")); b.status != http.StatusServiceUnavailable || b.header.Get("x-switchyard-degraded") != "" {
		t.Errorf("a new request with every attempt failing: %d x-switchyard-degraded %q, want the 503", b.status, b.header.Get("x-switchyard-degraded"))
	}
	for _, p := range []string{"openai", "anthropic", "gemini"} {
		_ = s.Sim.ClearFault(p)
	}

	if code, b := admin(t, s, http.MethodPost, "/admin/fault/down", `{"provider":"all"}`); code != http.StatusOK {
		t.Fatalf("drill: %d %s", code, b)
	}
	defer admin(t, s, http.MethodPost, "/admin/fault/up", `{"provider":"all"}`)
	stream := strings.Replace(body, `"max_tokens":20`, `"max_tokens":20,"stream":true`, 1)
	d := postCached(t, s, demoKey, stream)
	if d.status != http.StatusOK || d.header.Get("x-switchyard-degraded") != "true" || !strings.Contains(string(d.body), "data: [DONE]") {
		t.Fatalf("every provider down, streamed: %d x-switchyard-degraded %q: %s", d.status, d.header.Get("x-switchyard-degraded"), d.body)
	}
	rows := ledgerRecords(t, s)
	for _, id := range []string{a.header.Get("X-Request-Id"), as.header.Get("X-Request-Id"), d.header.Get("X-Request-Id")} {
		if r := rows[id]; r.Provider != "cache" || r.Status != http.StatusOK || r.CostMicros != 0 || r.SavedMicros != 0 {
			t.Errorf("degraded answer %s recorded as %+v; want provider cache, 200, zero cost, nothing saved (no provider could answer)", id, r)
		}
	}
}
