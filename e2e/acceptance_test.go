package e2e

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard/switchyard/deploy/grafana"
	"github.com/switchyard/switchyard/e2e/harness"
	"github.com/switchyard/switchyard/providersim"
	"github.com/switchyard/switchyard/stack"
	"github.com/switchyard/switchyard/state/ledger"
	"github.com/switchyard/switchyard/state/ledger/report"
	"github.com/switchyard/switchyard/state/priors"
	"github.com/switchyard/switchyard/state/store"
)

// Keys of the tenants the acceptance run adds to configs/local: tight's
// token bucket holds two requests and refills once every ten seconds;
// broke's daily budget ($0.0001) covers no request's worst case; the
// chat route's judge calls with judge's.
const (
	tightKey = "sk-test-tight"
	brokeKey = "sk-test-broke"
	judgeKey = "sk-test-judge"
)

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// acceptanceTenants is a policy file added to the copy of configs/local.
var acceptanceTenants = `tenants:
  - name: tight
    rate_limit: {replenish_rate: 0.1, burst_capacity: 2, requests_per_minute: 1000, tokens_per_minute: 100000000}
    keys: [{name: tight-key, sha256: ` + sha(tightKey) + `}]
  - name: broke
    budget_usd: {daily: 0.0001, monthly: 1}
    keys: [{name: broke-key, sha256: ` + sha(brokeKey) + `}]
  - name: judge
    keys: [{name: judge-key, sha256: ` + sha(judgeKey) + `}]
`

// sent is one request of the run as the client saw it.
type sent struct {
	what   string
	key    string
	status int
	// cache is the answer's X-Cache.
	cache string
}

// acceptanceRun is the scripted run of mixed traffic that TestAcceptance
// and TestDashboardQueries check, on a stack of its own with Prometheus
// scraping it.
type acceptanceRun struct {
	s    *stack.Stack
	prom *stack.Prometheus
	// sent maps request IDs to what the client sent and saw.
	sent map[string]sent
	// fallback and cut are the IDs of the request served after its
	// provider failed, and of the stream the client cut; cacheMiss and
	// cacheHit those of a deterministic request and of its repeat the
	// response cache answered.
	fallback, cut       string
	cacheMiss, cacheHit string
}

var (
	accOnce sync.Once
	acc     *acceptanceRun
)

// acceptance starts the run once; a test that calls it after a failed
// start fails too.
func acceptance(t *testing.T) *acceptanceRun {
	t.Helper()
	accOnce.Do(func() {
		root, err := stack.ModuleRoot()
		if err != nil {
			t.Fatal(err)
		}
		// The chat route caches deterministic answers, for the response
		// cache's panels; the script's other requests are not deterministic.
		// Its judge grades every answer auto routing gave a weaker model,
		// for the judged-quality panel, and it learns domain priors, for
		// the learning panels (half of its strong calls may buy a
		// reference to grade a weak answer against).
		routes := strings.Replace(cachedRoutes(t, "5m", ""), "translate, usage]",
			"translate, usage, {name: judge, args: {model: gpt-4o, sample: 1, api_key: {env: SWITCHYARD_JUDGE_KEY}}}]", 1)
		routes = strings.Replace(routes, "strategy: cost-optimized", "strategy: cost-optimized\n      learn: {explore: 0.5}", 1)
		s, err := stack.Start(context.Background(), stack.Options{Overlay: map[string]string{
			"acceptance.yaml": acceptanceTenants, "routes.yaml": routes,
		}, Env: []string{"SWITCHYARD_JUDGE_KEY=" + judgeKey}})
		if err != nil {
			t.Fatalf("starting the gateway: %v", err)
		}
		cleanups = append(cleanups, s.Close)
		sharedStacks = append(sharedStacks, s)
		prom, err := s.StartPrometheus(context.Background(), root)
		if err != nil {
			t.Fatalf("starting prometheus: %v", err)
		}
		r := &acceptanceRun{s: s, prom: prom, sent: map[string]sent{}}
		r.traffic(t)
		acc = r
	})
	if acc == nil {
		t.Fatal("the acceptance run failed to start (see the first test that ran it)")
	}
	return acc
}

// send posts a request and records what came back; a streamed answer is
// read to its end, or cut after its first generated text when cut is set.
func (r *acceptanceRun) send(t *testing.T, what, key, path, body string, cut bool) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.s.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	defer resp.Body.Close()
	id := resp.Header.Get("X-Request-Id")
	if id == "" {
		t.Fatalf("%s: no X-Request-Id", what)
	}
	if cut {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.Contains(sc.Text(), `"content":"`) && !strings.Contains(sc.Text(), `"content":""`) {
				break
			}
		}
		cancel()
	} else {
		_, _ = io.Copy(io.Discard, resp.Body)
	}
	r.sent[id] = sent{what: what, key: key, status: resp.StatusCode, cache: resp.Header.Get("x-switchyard-cache")}
	return id
}

// rate posts a thumbs up for the answer id through POST /v1/feedback (a
// rating, not a request of its own: the ledger holds no row for it).
func (r *acceptanceRun) rate(t *testing.T, id string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, r.s.URL+"/v1/feedback", strings.NewReader(`{"request_id":"`+id+`","thumbs":"up"}`))
	req.Header.Set("Authorization", "Bearer "+demoKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("rating %s: %v", id, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("rating %s: %d %s", id, resp.StatusCode, body)
	}
}

func chatBody(model string, stream bool, extra string) string {
	b := `{"model":"` + model + `","messages":[{"role":"user","content":"tell me about the gateway"}]`
	if stream {
		b += `,"stream":true,"stream_options":{"include_usage":true}`
	}
	return b + extra + "}"
}

// traffic is the script: successes of every provider, whole and streamed,
// an embedding, a fallback after a provider fault, refusals (a bad key, an
// unknown model, a rate limit, a budget), and a stream the client cuts.
func (r *acceptanceRun) traffic(t *testing.T) {
	const chat = "/v1/chat/completions"
	for _, m := range []string{"gpt-4o-mini", "claude-3-5-haiku", "gemini-2.0-flash", "gpt-4o"} {
		r.send(t, "whole "+m, demoKey, chat, chatBody(m, false, ""), false)
		r.send(t, "streamed "+m, demoKey, chat, chatBody(m, true, ""), false)
	}
	r.send(t, "embedding", demoKey, "/v1/embeddings", `{"model":"text-embedding-3-small","input":"hello"}`, false)
	// The dashboard's auto-routing panels: a request the router chose
	// the model of, the app's rating of its answer, and the judge's
	// (the simulated gpt-4o says "Rating: 9" when the conversation holds
	// [[rate 9]]). The grading's two calls are over before the faults
	// below, which would move them.
	// The learning panels first: two hard requests the strongest model
	// serves, each graded the other way round (the weak model's answer
	// against it, a shadow grading), whose strong calls buy the
	// reference the easy request below is graded against.
	for _, n := range []string{"1", "2"} {
		r.send(t, "auto hard "+n, demoKey, chat, `{"model":"auto","messages":[{"role":"user","content":"`+hardPrompt+` [[rate 6]]"}]}`, false)
	}
	auto := r.send(t, "auto", demoKey, chat, `{"model":"auto","messages":[{"role":"user","content":"tell me about the gateway [[rate 9]]"}]}`, false)
	r.rate(t, auto)
	if err := eventually(30*time.Second, func() error {
		if n, _ := harness.MetricSum(r.s.Replicas[0].ExtProcMetrics+"/metrics", "switchyard_judge_gradings_total", `route="chat"`); n < 3 {
			return errNotYet
		}
		return nil
	}); err != nil {
		t.Fatal("the judge never graded the three auto-routed answers")
	}
	// The response cache's panels: an answer, then its repeat from the
	// cache (the answer is stored once its exchange is done, a moment
	// after the client has it: a repeat sent sooner is a miss too).
	deterministic := chatBody("gpt-4o-mini", false, `,"temperature":0`)
	r.cacheMiss = r.send(t, "cache miss", demoKey, chat, deterministic, false)
	for i := 0; i < 5 && r.cacheHit == ""; i++ {
		if id := r.send(t, "cache repeat", demoKey, chat, deterministic, false); r.sent[id].cache == "hit" {
			r.cacheHit = id
		}
	}
	if r.cacheHit == "" {
		t.Fatal("five repeats of a deterministic request: none answered from the response cache")
	}

	if err := r.s.Sim.SetFault("openai", providersim.Fault{Mode: providersim.FaultDown503}); err != nil {
		t.Fatal(err)
	}
	r.fallback = r.send(t, "fallback", demoKey, chat, chatBody("gpt-4o-mini", false, ""), false)
	if err := r.s.Sim.ClearFault("openai"); err != nil {
		t.Fatal(err)
	}

	r.send(t, "bad key", "sk-not-a-key", chat, chatBody("gpt-4o-mini", false, ""), false)
	r.send(t, "unknown model", demoKey, chat, chatBody("gpt-17", false, ""), false)
	for i := range 4 {
		r.send(t, "tight "+strconv.Itoa(i), tightKey, chat, chatBody("gpt-4o-mini", false, ""), false)
	}
	r.send(t, "over budget", brokeKey, chat, chatBody("gpt-4o", false, `,"max_tokens":1000`), false)

	if err := r.s.Sim.SetFault("anthropic", providersim.Fault{Mode: providersim.FaultSlowStream, Delay: providersim.Duration(300 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	r.cut = r.send(t, "cut stream", demoKey, chat, chatBody("claude-3-5-haiku", true, ""), true)
	// The stream ends on the gateway's side a moment after the client left.
	if err := eventually(10*time.Second, func() error {
		if _, ok := ledgerRecords(t, r.s)[r.cut]; !ok {
			return errNotYet
		}
		return nil
	}); err != nil {
		t.Fatal("the cut stream never reached the ledger")
	}
	if err := r.s.Sim.ClearFault("anthropic"); err != nil {
		t.Fatal(err)
	}
}

// metricSum sums every series of a metric at a Prometheus text endpoint,
// keeping those whose labels contain every one of match.
func metricSum(t *testing.T, url, name string, match ...string) float64 {
	t.Helper()
	v, err := harness.MetricSum(url, name, match...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// qualityDomains is the domains part of the caller's /v1/usage/quality.
func qualityDomains(t *testing.T, base, key string) []priors.DomainReport {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/usage/quality", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var q struct {
		Domains []priors.DomainReport `json:"domains"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&q); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/v1/usage/quality: %d %v", resp.StatusCode, err)
	}
	return q.Domains
}

// hardPrompt scores as complex: auto routing gives it the strongest model.
const hardPrompt = "Prove step by step that for every integer n >= 1 the sum of the first n odd numbers equals n^2, then derive the closed form of the sum of the first n squares, calculate the probability that two random integers below 1000 are coprime, and explain exactly why each step holds. Therefore, if the premise holds, derive the bound without approximation."

// TestAcceptance: after the scripted run, the ledger holds one row per
// request as the client saw it, and the usage API, the metrics and the
// budget counters agree with the ledger to the micro-dollar.
func TestAcceptance(t *testing.T) {
	r := acceptance(t)
	rows := ledgerRecords(t, r.s)

	judged := 0
	for _, row := range rows {
		if row.Tenant == "judge" {
			judged++
		}
	}
	t.Run("the judge's calls are its key's rows", func(t *testing.T) {
		var models []string
		for _, row := range rows {
			if row.Tenant == "judge" {
				models = append(models, row.ServedModel)
				if row.Status != 200 || row.CostMicros == 0 || row.KeyName != "judge-key" {
					t.Errorf("judge row %+v, want a served, priced request of judge-key", row)
				}
			}
		}
		slices.Sort(models)
		want := []string{"claude-3-5-sonnet", "gemini-2.0-flash", "gemini-2.0-flash", "gpt-4o", "gpt-4o", "gpt-4o"}
		if !slices.Equal(models, want) {
			t.Errorf("judge rows served by %v, want %v: the weak answer's reference (claude-3-5-sonnet, the strongest) and verdict (gpt-4o), and each hard request's weak answer (gemini-2.0-flash, the cheapest) and verdict", models, want)
		}
		metrics := r.s.Replicas[0].ExtProcMetrics + "/metrics"
		graded := metricSum(t, metrics, "switchyard_judge_gradings_total", `route="chat"`, `outcome="graded"`)
		shadow := metricSum(t, metrics, "switchyard_judge_gradings_total", `route="chat"`, `outcome="shadow"`)
		score := metricSum(t, metrics, "switchyard_judge_score_total", `route="chat"`)
		if graded != 1 || shadow != 2 || math.Abs(score-8.0/9) > 1e-9 {
			t.Errorf("judge: %v graded, %v shadow, score %v; want 1 graded at 8/9 (Rating: 9) and the 2 shadow gradings apart", graded, shadow, score)
		}
		if v := metricSum(t, metrics, "switchyard_routing_domain_verdicts_total", `route="chat"`, `tenant="demo"`, `source="judge"`); v != 3 {
			t.Errorf("demo's domain took %v verdicts, want the judge's 3", v)
		}
		// The verdict is in the usage API beside the app's thumbs up.
		req, _ := http.NewRequest(http.MethodGet, r.s.URL+"/v1/usage/quality", nil)
		req.Header.Set("Authorization", "Bearer "+demoKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var q report.QualityReport
		if err := json.NewDecoder(resp.Body).Decode(&q); err != nil || resp.StatusCode != 200 {
			t.Fatalf("/v1/usage/quality: %d %v", resp.StatusCode, err)
		}
		var judgedRows []ledger.Quality
		for _, row := range q.Data {
			if row.Judged > 0 {
				judgedRows = append(judgedRows, row.Quality)
			}
		}
		if len(judgedRows) != 1 || judgedRows[0].Route != "chat" || judgedRows[0].Judged != 1 || math.Abs(judgedRows[0].MeanJudged-8.0/9) > 1e-9 || judgedRows[0].Ratings != 1 {
			t.Errorf("/v1/usage/quality rows with a verdict %+v, want chat's one at 8/9 beside its one rating", judgedRows)
		}
		// The domain the three verdicts (and the app's thumbs) taught: the
		// demo app without a system prompt, as of the learner's last
		// refresh.
		if err := eventually(15*time.Second, func() error {
			ds := qualityDomains(t, r.s.URL, demoKey)
			if len(ds) != 1 || ds[0].Route != "chat" || ds[0].App != "demo" || ds[0].Domain != "0000000000000000" || ds[0].Verdicts != 4 || ds[0].Requests != 3 {
				return fmt.Errorf("domains %+v, want demo's one with 3 requests and 4 verdicts", ds)
			}
			return nil
		}); err != nil {
			t.Error(err)
		}
	})

	t.Run("every authenticated request is in the ledger as the client saw it", func(t *testing.T) {
		wantStatus := map[string]int{"bad key": 401, "unknown model": 404, "tight 2": 429, "tight 3": 429, "over budget": 429}
		anonymous := 0
		for id, snt := range r.sent {
			row, ok := rows[id]
			if snt.what == "bad key" {
				// Nobody's request: counted in a metric, not recorded.
				anonymous++
				if ok || snt.status != 401 {
					t.Errorf("bad key: the client got %d, ledger row %+v; want 401 and no row", snt.status, row)
				}
				continue
			}
			if !ok {
				t.Errorf("%s (%s): no ledger row", snt.what, id)
				continue
			}
			want := 200
			if w, ok := wantStatus[snt.what]; ok {
				want = w
			}
			if id == r.cut {
				want = snt.status // 200 headers; the row says how it ended
			}
			if snt.status != want {
				t.Errorf("%s: the client got %d, want %d", snt.what, snt.status, want)
			}
			if id != r.cut && row.Status != snt.status {
				t.Errorf("%s: ledger status %d, the client got %d", snt.what, row.Status, snt.status)
			}
			// An embedding of a few tokens costs less than half a micro-dollar.
			free := row.Provider == "cache" // the response cache's answer costs nothing
			if row.Status == 200 && (row.InputTokens == 0 || (row.Route == "chat" && row.CostMicros == 0 && !free) || row.UsageEstimated) {
				t.Errorf("%s: served row without its real usage: %+v", snt.what, row)
			}
			if id != r.cut && row.Status >= 400 && (row.CostMicros != 0 || row.ErrorType == "") {
				t.Errorf("%s: refused row %+v costs %d, error type %q", snt.what, row, row.CostMicros, row.ErrorType)
			}
		}
		if len(rows)-judged != len(r.sent)-anonymous {
			t.Errorf("ledger holds %d rows besides the judge's %d, the client sent %d requests with a key", len(rows)-judged, judged, len(r.sent)-anonymous)
		}
		fb := rows[r.fallback]
		if fb.ServedModel != "claude-3-5-haiku" || fb.Attempts != 2 || len(fb.FallbackReasons) != 1 || fb.FallbackReasons[0] != "openai/gpt-4o-mini: 503" {
			t.Errorf("fallback row %+v, want served by claude-3-5-haiku after openai's 503", fb)
		}
		cut := rows[r.cut]
		if cut.Status != 499 || cut.ErrorType != "client_disconnected" || !cut.UsageEstimated || cut.OutputTokens == 0 || cut.CostMicros == 0 || cut.TimeToFirstToken == 0 {
			t.Errorf("cut stream row %+v, want 499 with estimated, priced usage and a first token", cut)
		}
		miss, hit := rows[r.cacheMiss], rows[r.cacheHit]
		if miss.Provider != "openai" || miss.CostMicros == 0 || miss.SavedMicros != 0 ||
			hit.Provider != "cache" || hit.CostMicros != 0 || hit.SavedMicros != miss.CostMicros || hit.OutputTokens != miss.OutputTokens {
			t.Errorf("response cache: miss %+v, hit %+v; want the hit free, saving the miss's cost", miss, hit)
		}
		for _, row := range rows {
			if row.Stream && row.Status == 200 && row.TimeToFirstToken == 0 {
				t.Errorf("streamed row %s has no time to first token", row.RequestID)
			}
		}
	})

	byTenant := map[string]ledger.Totals{}
	byModel := map[string]ledger.Totals{}
	var total ledger.Totals
	for _, row := range rows {
		tt, mt := byTenant[row.Tenant], byModel[row.Model()]
		tt.Add(&row)
		mt.Add(&row)
		byTenant[row.Tenant], byModel[row.Model()] = tt, mt
		total.Add(&row)
	}

	t.Run("the usage API sums the ledger rows", func(t *testing.T) {
		for path, want := range map[string]map[string]ledger.Totals{"/admin/usage/by-tenant": byTenant, "/admin/usage/by-model": byModel} {
			code, b := admin(t, r.s, http.MethodGet, path, "")
			var rep report.Report
			if code != 200 || json.Unmarshal(b, &rep) != nil {
				t.Fatalf("%s: %d %s", path, code, b)
			}
			got := map[string]ledger.Totals{}
			for _, row := range rep.Data {
				got[row.Tenant+row.Model] = row.Totals
			}
			if fmt.Sprint(got) != fmt.Sprint(want) || rep.Total.Totals != total {
				t.Errorf("%s:\n got  %v (total %+v)\n want %v (total %+v)", path, got, rep.Total.Totals, want, total)
			}
		}
		req, _ := http.NewRequest(http.MethodGet, r.s.URL+"/v1/usage", nil)
		req.Header.Set("Authorization", "Bearer "+demoKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var own report.Report
		if err := json.NewDecoder(resp.Body).Decode(&own); err != nil || resp.StatusCode != 200 {
			t.Fatalf("/v1/usage: %d %v", resp.StatusCode, err)
		}
		if own.Tenant != "demo" || own.Total.Totals != byTenant["demo"] {
			t.Errorf("/v1/usage with demo's key: %+v, want demo's rows %+v", own.Total.Totals, byTenant["demo"])
		}
	})

	t.Run("the metrics count what the ledger holds", func(t *testing.T) {
		url := r.s.Replicas[0].ExtProcMetrics + "/metrics"
		checks := []struct {
			name string
			got  float64
			want int64
		}{
			{"requests", metricSum(t, url, "switchyard_usage_requests_total"), total.Requests},
			{"errors", metricSum(t, url, "switchyard_usage_requests_total", `status="4`) + metricSum(t, url, "switchyard_usage_requests_total", `status="5`), total.Errors},
			{"cost", metricSum(t, url, "switchyard_usage_cost_micro_usd_total"), total.CostMicros},
			{"saved by the response cache", metricSum(t, url, "switchyard_usage_cache_saved_micro_usd_total"), total.SavedMicros},
			{"input tokens", metricSum(t, url, "switchyard_usage_tokens_total", `type="input"`), total.InputTokens},
			{"output tokens", metricSum(t, url, "switchyard_usage_tokens_total", `type="output"`), total.OutputTokens},
			{"demo's cost", metricSum(t, url, "switchyard_usage_cost_micro_usd_total", `tenant="demo"`), byTenant["demo"].CostMicros},
			{"GenAI output tokens", metricSum(t, url, "gen_ai_client_token_usage_sum", `gen_ai_token_type="output"`), total.OutputTokens},
		}
		for _, c := range checks {
			if c.got != float64(c.want) {
				t.Errorf("%s: metrics say %v, the ledger %d", c.name, c.got, c.want)
			}
		}
		if got := metricSum(t, url, "switchyard_usage_fallbacks_total", `reason="503"`); got != 1 {
			t.Errorf("fallbacks by 503: %v, want 1", got)
		}
		if got := metricSum(t, url, "switchyard_quota_refusals_total", `tenant="tight"`); got != 2 {
			t.Errorf("tight's quota refusals: %v, want 2", got)
		}
	})

	t.Run("the budget counters hold what the ledger charged", func(t *testing.T) {
		rc := redis.NewClient(&redis.Options{Addr: r.s.RedisAddr})
		defer rc.Close()
		st := store.NewRedis(rc, store.Options{})
		for _, tenant := range []string{"demo", "broke"} {
			var got store.BudgetState
			err := eventually(10*time.Second, func() error {
				var err error
				got, err = st.Budget(context.Background(), store.BudgetLine{Scope: store.Scope{Tenant: tenant}, Period: store.Daily, Limit: 1_000_000 * 1_000_000})
				if err == nil && (got.Spent != byTenant[tenant].CostMicros || got.Reserved != 0) {
					return errNotYet
				}
				return err
			})
			if err != nil {
				t.Errorf("%s's daily budget: spent %d, reserved %d; the ledger charged %d (%v)", tenant, got.Spent, got.Reserved, byTenant[tenant].CostMicros, err)
			}
		}
	})
}

// TestDashboardQueries runs every query of every panel of the shipped
// dashboards through the real Prometheus scraping the acceptance run's
// stack: each must parse and return data, and the spend panel must show
// what the ledger holds.
func TestDashboardQueries(t *testing.T) {
	r := acceptance(t)
	root, _ := stack.ModuleRoot()
	ds, err := grafana.Load(root + "/deploy/grafana/dashboards")
	if err != nil || len(ds) == 0 {
		t.Fatalf("dashboards: %v", err)
	}
	ctx := context.Background()
	rows := ledgerRecords(t, r.s)
	// Wait for scrapes after the last request, two of them for rates.
	if err := eventually(30*time.Second, func() error {
		v, err := r.prom.Query(ctx, `sum(switchyard_usage_requests_total)`)
		if err != nil || len(v) != 1 || v[0].Value != float64(len(rows)) {
			return errNotYet
		}
		return nil
	}); err != nil {
		t.Fatalf("prometheus never saw the run's %d requests", len(rows))
	}
	time.Sleep(3 * time.Second)
	for name, d := range ds {
		for _, v := range d.Templating.List {
			t.Run(name+"/variable "+v.Name, func(t *testing.T) {
				metric, label, ok := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(v.Definition, "label_values("), ")"), ",")
				if !ok {
					t.Fatalf("variable %s: %q is not label_values(metric, label)", v.Name, v.Definition)
				}
				got, err := r.prom.Query(ctx, "count by ("+strings.TrimSpace(label)+") ("+metric+")")
				if err != nil || len(got) == 0 {
					t.Errorf("variable %s: %d values, %v", v.Name, len(got), err)
				}
			})
		}
		for _, q := range d.Queries() {
			t.Run(name+"/"+q.Panel+"/"+q.RefID, func(t *testing.T) {
				expr := d.Expand(q.Expr, nil)
				got, err := r.prom.Query(ctx, expr)
				if err != nil {
					t.Fatalf("%s: %v", expr, err)
				}
				if len(got) == 0 {
					t.Errorf("%s returned no data", expr)
				}
			})
		}
	}

	t.Run("the spend panel shows the ledger's figures", func(t *testing.T) {
		var expr string
		for _, d := range ds {
			for _, q := range d.Queries() {
				if q.Panel == "Spend recorded by ext_proc" {
					expr = d.Expand(q.Expr, nil)
				}
			}
		}
		if expr == "" {
			t.Fatal("no spend panel")
		}
		got, err := r.prom.Query(ctx, expr)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int64{}
		for _, row := range rows {
			if row.CostMicros > 0 {
				want[row.Tenant] += row.CostMicros
			}
		}
		for _, s := range got {
			tenant := s.Labels["tenant"]
			if math.Abs(s.Value-float64(want[tenant])/1e6) > 1e-9 {
				t.Errorf("tenant %q: the dashboard shows $%v, the ledger $%s", tenant, s.Value, report.USD(want[tenant]))
			}
			delete(want, tenant)
		}
		if len(want) != 0 {
			t.Errorf("tenants missing from the panel: %v", want)
		}
	})
}
