package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/e2e/harness"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/filters/translate"
	"github.com/switchyard/switchyard/stack"
	"github.com/switchyard/switchyard/state/store"
)

const teamKey = "sk-local-team"

// answer is one HTTP exchange with the gateway, as the client saw it.
type answer struct {
	status int
	header http.Header
	body   []byte
	closed bool // the gateway closed the connection after this answer
}

func (a answer) code() string {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(a.body, &e)
	return e.Error.Code
}

// usage is the usage block of a chat completion.
func (a answer) usage() filters.Usage {
	var r struct {
		Usage struct {
			PromptTokens        int `json:"prompt_tokens"`
			CompletionTokens    int `json:"completion_tokens"`
			PromptTokensDetails struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	_ = json.Unmarshal(a.body, &r)
	return filters.Usage{Known: true, PromptTokens: r.Usage.PromptTokens, CompletionTokens: r.Usage.CompletionTokens, CachedTokens: r.Usage.PromptTokensDetails.CachedTokens}
}

// fresh sends every request on a new connection, so the kernel spreads
// them across the replicas that share the listener port.
var fresh = &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// chatAs sends one chat completion with key and returns the answer.
func chatAs(t *testing.T, c *http.Client, s *stack.Stack, key, model string, maxTokens int, header ...string) answer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/chat/completions", strings.NewReader(quotaBody(model, maxTokens)))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Errorf("chat completion: %v", err)
		return answer{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: b, closed: resp.Close}
}

func quotaBody(model string, maxTokens int) string {
	return fmt.Sprintf(`{"model":%q,"max_tokens":%d,"messages":[{"role":"user","content":"how are budgets kept?"}]}`, model, maxTokens)
}

// burst sends n requests from workers goroutines and returns the answers.
func burst(n, workers int, send func() answer) []answer {
	out := make([]answer, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i] = send()
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// TestQuotaSeedScenario: 200 quick requests from the small team tenant
// produce 429s with the rate-limit headers, while the demo tenant, sending
// at the same time, is not refused once.
func TestQuotaSeedScenario(t *testing.T) {
	var team, demo []answer
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		team = burst(200, 20, func() answer { return chatAs(t, http.DefaultClient, shared, teamKey, "gpt-4o-mini", 16) })
	}()
	go func() {
		defer wg.Done()
		demo = burst(60, 6, func() answer { return chatAs(t, http.DefaultClient, shared, demoKey, "gpt-4o-mini", 16) })
	}()
	wg.Wait()

	counts := map[string]int{}
	for _, a := range team {
		counts[strconv.Itoa(a.status)+" "+a.code()]++
	}
	if counts["200 "] == 0 || counts["429 rate_limit_exceeded"] == 0 || counts["200 "]+counts["429 rate_limit_exceeded"] != 200 {
		t.Errorf("team: %v; want some served and the rest refused with 429 rate_limit_exceeded", counts)
	}
	for _, a := range demo {
		if a.status != http.StatusOK {
			t.Fatalf("demo was refused while team was limited: %d %s", a.status, a.body)
		}
	}

	// The headers of every refusal, and of answers served.
	for _, a := range team {
		h := a.header
		if a.status == http.StatusTooManyRequests {
			if n, err := strconv.Atoi(h.Get("Retry-After")); err != nil || n < 1 || n > 60 {
				t.Errorf("retry-after %q, want 1..60 seconds", h.Get("Retry-After"))
			}
			if got := h.Get("X-Ratelimit-Remaining-Requests"); got != "0" {
				t.Errorf("a refusal says %q requests remain, want 0", got)
			}
			// The tightest request limit: the bucket of 5 or the 60 a minute.
			if got := h.Get("X-Ratelimit-Limit-Requests"); got != "5" && got != "60" {
				t.Errorf("x-ratelimit-limit-requests %q, want 5 or 60", got)
			}
		}
		if got := h.Get("X-Ratelimit-Limit-Tokens"); got != "20000" {
			t.Errorf("%d answer: x-ratelimit-limit-tokens %q, want 20000", a.status, got)
		}
		if n, err := strconv.Atoi(h.Get("X-Ratelimit-Remaining-Tokens")); err != nil || n < 0 || n > 20000 {
			t.Errorf("%d answer: x-ratelimit-remaining-tokens %q, want 0..20000", a.status, h.Get("X-Ratelimit-Remaining-Tokens"))
		}
		if a.status == http.StatusOK && h.Get("X-Ratelimit-Remaining-Requests") == "" {
			t.Error("a served answer has no x-ratelimit-remaining-requests")
		}
	}
}

// TestQuotaBudgetRefusal: a key whose budget cannot cover a request's worst
// case gets 429 insufficient_quota that names the budget, says not to
// retry, and says when the budget renews.
func TestQuotaBudgetRefusal(t *testing.T) {
	code, b := admin(t, shared, http.MethodPost, "/admin/keys",
		`{"tenant":"demo","name":"e2e-penny","budget_usd":{"daily":0.00001}}`)
	if code != http.StatusCreated {
		t.Fatalf("issuing a key: %d %s", code, b)
	}
	var issued struct{ Key string }
	_ = json.Unmarshal(b, &issued)
	a := chatAs(t, http.DefaultClient, shared, issued.Key, "gpt-4o-mini", 100)
	if a.status != http.StatusTooManyRequests || a.code() != "insufficient_quota" {
		t.Fatalf("got %d %s, want 429 insufficient_quota", a.status, a.body)
	}
	if !strings.Contains(string(a.body), "daily budget of key e2e-penny of tenant demo is exhausted") {
		t.Errorf("the message does not name the budget and period: %s", a.body)
	}
	if a.header.Get("X-Should-Retry") != "false" || a.header.Get("Retry-After") == "" {
		t.Errorf("x-should-retry %q, retry-after %q; want false and the time to midnight",
			a.header.Get("X-Should-Retry"), a.header.Get("Retry-After"))
	}
	if a.header.Get("X-Ratelimit-Limit-Requests") == "" || a.header.Get("X-Ratelimit-Limit-Tokens") == "" {
		t.Errorf("a budget refusal lacks the rate-limit headers: %v", a.header)
	}
}

// tightTenant is a tenant with a budget small enough for a few dozen
// requests, refused rather than served unchecked if Redis is unreachable.
const tightTenant = `
tenants:
  - name: demo
    keys:
      - {name: demo-key, sha256: 4ff444b1a79536cc47732956cf5bc6256abf64bc1b8adff6843fac08bbb6be9f}
  - name: tight
    budget_usd: {daily: 0.0005, on_store_outage: closed}
    keys:
      - {name: tight-key, sha256: %s}
`

// leasedTenants has tight with a budget of a few hundred requests, large
// enough for replicas to hold leases of it until it nears its end, and
// roomy, far from every limit it has.
const leasedTenants = `
tenants:
  - name: demo
    keys:
      - {name: demo-key, sha256: 4ff444b1a79536cc47732956cf5bc6256abf64bc1b8adff6843fac08bbb6be9f}
  - name: tight
    budget_usd: {daily: 0.003, on_store_outage: closed}
    keys:
      - {name: tight-key, sha256: %s}
  - name: roomy
    budget_usd: {daily: 1000, monthly: 10000}
    rate_limit: {replenish_rate: 10000, burst_capacity: 20000, requests_per_minute: 1000000, tokens_per_minute: 1000000000}
    keys:
      - {name: roomy-key, sha256: %s}
`

// TestQuotaBudgetAcrossReplicas: two Envoys and two ext_procs share one
// Redis; hundreds of concurrent requests spend a small budget. What is
// committed never exceeds the budget, nothing stays reserved once they
// end, and what is committed is exactly what the answers' usage cost.
//
// Each replica holds leases of the budget (state/lease) and admits from
// them without Redis while they last; the counters above hold with the
// leases at work, and with a tenant far from its limits (roomy) most
// requests are admitted with no Redis round trip at all.
func TestQuotaBudgetAcrossReplicas(t *testing.T) {
	const key, roomyKey = "sk-e2e-tight", "sk-e2e-roomy"
	sum, roomySum := sha256.Sum256([]byte(key)), sha256.Sum256([]byte(roomyKey))
	o := stack.Options{Replicas: 2, Overlay: map[string]string{"tenants.yaml": fmt.Sprintf(leasedTenants, hex.EncodeToString(sum[:]), hex.EncodeToString(roomySum[:]))}}
	s := startStack(t, o)
	pol, err := policy.Load(s.PolicyDir)
	if err != nil {
		t.Fatal(err)
	}
	budget := pol.Tenants[1].Budget.DailyMicros
	leased := func() (lease, viaStore float64) {
		t.Helper()
		for _, r := range s.Replicas {
			l, err := harness.MetricSum(r.ExtProcMetrics+"/metrics", "switchyard_lease_admissions_total", `path="lease"`)
			if err != nil {
				t.Fatal(err)
			}
			v, err := harness.MetricSum(r.ExtProcMetrics+"/metrics", "switchyard_lease_admissions_total", `path="store"`)
			if err != nil {
				t.Fatal(err)
			}
			lease, viaStore = lease+l, viaStore+v
		}
		return lease, viaStore
	}

	rc := redis.NewClient(&redis.Options{Addr: s.RedisAddr})
	defer rc.Close()
	st := store.NewRedis(rc, store.Options{})
	line := store.BudgetLine{Scope: store.Scope{Tenant: "tight"}, Period: store.Daily, Limit: budget}
	// settled waits until no reservation is left: Done settles a request
	// just after its client has the answer.
	settled := func() store.BudgetState {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			b, err := st.Budget(context.Background(), line)
			if err != nil {
				t.Fatal(err)
			}
			if b.Reserved == 0 || time.Now().After(deadline) {
				return b
			}
		}
	}

	// Rounds of 200 concurrent requests until a round is served nothing:
	// then what is left cannot cover one more request's worst case.
	var served, refused, unchecked, rounds int
	var billed int64
	var servedIDs []string
	var b store.BudgetState
	for roundServed := -1; roundServed != 0 && rounds < 20; rounds++ {
		roundServed = 0
		for _, a := range burst(200, 200, func() answer { return chatAs(t, fresh, s, key, "gpt-4o-mini", 10) }) {
			switch {
			case a.status == http.StatusOK:
				served++
				roundServed++
				m := pol.Model(a.header.Get("x-switchyard-model"))
				if m == nil {
					t.Fatalf("served by an unknown model %q", a.header.Get("x-switchyard-model"))
				}
				billed += translate.Cost(m, a.usage())
				servedIDs = append(servedIDs, a.header.Get("X-Request-Id"))
			case a.status == http.StatusTooManyRequests && a.code() == "insufficient_quota":
				refused++
			case a.status == http.StatusServiceUnavailable && a.code() == "quota_unavailable":
				// A store call that timed out on a busy machine: this budget
				// fails closed, so the request was refused, not served unchecked.
				unchecked++
			default:
				t.Errorf("unexpected answer %d %s", a.status, a.body)
			}
		}
		if b = settled(); b.Reserved != 0 {
			t.Fatalf("%d micro-USD still reserved after round %d ended, want 0", b.Reserved, rounds+1)
		}
		if b.Spent > budget {
			t.Fatalf("after round %d: spent %d micro-USD of a %d budget", rounds+1, b.Spent, budget)
		}
	}
	t.Logf("%d rounds: served %d, refused %d, refused unchecked %d; budget %d, spent %d, billed %d micro-USD",
		rounds, served, refused, unchecked, budget, b.Spent, billed)
	if served == 0 || refused == 0 {
		t.Fatalf("served %d, refused %d: the budget should run out part way", served, refused)
	}
	replicas := map[string]bool{}
	for _, id := range servedIDs {
		replicas[replicaOf(t, s, id)] = true
	}
	if len(replicas) != 2 || !replicas["extproc-0"] || !replicas["extproc-1"] {
		t.Errorf("served by replicas %v; want both", replicas)
	}
	if worst := worstCase(t, pol, quotaBody("gpt-4o-mini", 10)); budget-b.Spent >= worst {
		t.Errorf("%d micro-USD left unspent, enough for a request's worst case of %d, yet the last round served none", budget-b.Spent, worst)
	}
	if b.Spent != billed {
		t.Errorf("spent %d micro-USD, but the answers' usage costs %d", b.Spent, billed)
	}
	if logged := ledgerCost(t, s, "tight", b.Spent); logged != b.Spent {
		t.Errorf("the ledger rows add up to %d micro-USD, the budget says %d were spent", logged, b.Spent)
	}
	fromLeases, fromStore := leased()
	t.Logf("tight: %.0f admissions from leases, %.0f by Redis", fromLeases, fromStore)
	if fromLeases == 0 {
		t.Error("no admission of tight was made from a lease")
	}

	// roomy, far from its limits: once the leases are taken, admissions
	// need no Redis round trip; its budget still ends exact.
	line = store.BudgetLine{Scope: store.Scope{Tenant: "roomy"}, Period: store.Daily, Limit: pol.Tenants[2].Budget.DailyMicros}
	billed = 0
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	defer tr.CloseIdleConnections()
	kept := &http.Client{Timeout: 60 * time.Second, Transport: tr}
	for _, a := range burst(600, 16, func() answer { return chatAs(t, kept, s, roomyKey, "gpt-4o-mini", 10) }) {
		if a.status != http.StatusOK {
			t.Fatalf("roomy: %d %s", a.status, a.body)
		}
		billed += translate.Cost(pol.Model(a.header.Get("x-switchyard-model")), a.usage())
	}
	if b = settled(); b.Reserved != 0 || b.Spent != billed {
		t.Errorf("roomy: spent %d reserved %d once its leases are retired; want %d billed and 0", b.Spent, b.Reserved, billed)
	}
	if logged := ledgerCost(t, s, "roomy", b.Spent); logged != b.Spent {
		t.Errorf("roomy: the ledger rows add up to %d micro-USD, the budget says %d", logged, b.Spent)
	}
	l2, s2 := leased()
	fromLeases, fromStore = l2-fromLeases, s2-fromStore
	t.Logf("roomy: %.0f of 600 admissions from leases, %.0f by Redis", fromLeases, fromStore)
	if fromLeases+fromStore != 600 || fromStore > 600/4 {
		t.Errorf("roomy: %.0f admissions by Redis and %.0f from leases; want 600 in all, at most a quarter by Redis (the leases' warm-up)", fromStore, fromLeases)
	}
}

// worstCase is what quota reserves for body on the local policy's chat
// route: the highest worst case of the cheap models a gpt-4o-mini request
// may fall back to.
func worstCase(t *testing.T, pol *policy.Policy, body string) int64 {
	t.Helper()
	req, err := openaiapi.ParseChatRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	prompt := int64(openaiapi.EstimatePromptTokens(req))
	var worst int64
	for _, name := range []string{"gpt-4o-mini", "claude-3-5-haiku", "gemini-2.0-flash"} {
		p := pol.Model(name).Price
		worst = max(worst, (prompt*p.InputPerMTok+int64(req.OutputCap())*p.OutputPerMTok+999_999)/1_000_000)
	}
	return worst
}

// replicaOf names the ext_proc whose log mentions a request. A request is
// logged when it ends, which can be just after its client has the answer.
func replicaOf(t *testing.T, s *stack.Stack, requestID string) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		for i := range s.Replicas {
			name := "extproc-" + strconv.Itoa(i)
			if strings.Contains(s.Log(name), `"request_id":"`+requestID+`"`) {
				return name
			}
		}
		if time.Now().After(deadline) {
			return "none"
		}
	}
}

// ledgerCost adds up the ledger rows of tenant, waiting up to 10 s for
// them to reach want: each replica's writer flushes its batch on its own
// schedule, so the last rows land a little after the answers.
func ledgerCost(t *testing.T, s *stack.Stack, tenant string, want int64) int64 {
	t.Helper()
	var total int64
	_ = eventually(10*time.Second, func() error {
		total = 0
		for _, r := range ledgerRecords(t, s) {
			if r.Tenant == tenant {
				total += r.CostMicros
			}
		}
		if total != want {
			return errNotYet
		}
		return nil
	})
	return total
}

// TestQuotaKeyLifecycleAcrossReplicas: a key issued through one replica's
// admin API works on both; rotated, its old secret is refused on both;
// revoked, it is refused on both at once.
func TestQuotaKeyLifecycleAcrossReplicas(t *testing.T) {
	s := startStack(t, stack.Options{Replicas: 2})
	code, b := admin(t, s, http.MethodPost, "/admin/keys", `{"tenant":"demo","name":"e2e-ci","app":"demo"}`)
	if code != http.StatusCreated {
		t.Fatalf("issue: %d %s", code, b)
	}
	var issued struct {
		Key string `json:"key"`
	}
	_ = json.Unmarshal(b, &issued)

	// expect sends 20 requests on fresh connections and wants every one
	// answered with status, by both replicas between them.
	expect := func(step, key string, status int) {
		t.Helper()
		seen := map[string]bool{}
		for range 20 {
			a := chatAs(t, fresh, s, key, "gpt-4o-mini", 5)
			if a.status != status {
				t.Fatalf("%s: got %d %s, want %d", step, a.status, a.body, status)
			}
			seen[replicaOf(t, s, a.header.Get("X-Request-Id"))] = true
		}
		if !seen["extproc-0"] || !seen["extproc-1"] {
			t.Errorf("%s: answered by %v; want both replicas", step, seen)
		}
	}
	expect("issued", issued.Key, http.StatusOK)

	code, b = admin(t, s, http.MethodGet, "/admin/keys?tenant=demo", "")
	if code != http.StatusOK || !strings.Contains(string(b), `"name":"e2e-ci"`) || strings.Contains(string(b), issued.Key) {
		t.Errorf("list: %d %s; want the key listed without its secret", code, b)
	}

	code, b = admin(t, s, http.MethodPost, "/admin/keys/e2e-ci/rotate?tenant=demo", "")
	var rotated struct {
		Key string `json:"key"`
	}
	_ = json.Unmarshal(b, &rotated)
	if code != http.StatusOK || rotated.Key == "" {
		t.Fatalf("rotate: %d %s", code, b)
	}
	expect("rotated out", issued.Key, http.StatusUnauthorized)
	expect("rotated in", rotated.Key, http.StatusOK)

	if code, b := admin(t, s, http.MethodDelete, "/admin/keys/e2e-ci?tenant=demo", ""); code != http.StatusOK {
		t.Fatalf("revoke: %d %s", code, b)
	}
	expect("revoked", rotated.Key, http.StatusUnauthorized)

	for i := range s.Replicas {
		log := s.Log("extproc-" + strconv.Itoa(i))
		if strings.Contains(log, issued.Key) || strings.Contains(log, rotated.Key) {
			t.Errorf("extproc-%d logged a virtual key", i)
		}
	}
}
