package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/switchyard/switchyard/stack"
	"github.com/switchyard/switchyard/state/ledger"
)

// post sends a raw chat request and returns its status, request ID and body.
func post(t *testing.T, s *stack.Stack, key, body string) (int, string, []byte) {
	t.Helper()
	return postWith(t, s, key, body, nil)
}

// postWith is post with headers of the client's own.
func postWith(t *testing.T, s *stack.Stack, key, body string, header http.Header) (int, string, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/chat/completions", strings.NewReader(body))
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("X-Request-Id"), b
}

// logLines returns the JSON lines of a process's log that satisfy keep.
func logLines(s *stack.Stack, process string, keep func(map[string]any) bool) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s.Log(process)))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && keep(m) {
			out = append(out, m)
		}
	}
	return out
}

// accessLog waits for Envoy's access log line of a request.
func accessLog(t *testing.T, s *stack.Stack, requestID string) map[string]any {
	t.Helper()
	var line map[string]any
	err := eventually(10*time.Second, func() error {
		lines := logLines(s, "envoy-0", func(m map[string]any) bool { return m["request_id"] == requestID })
		if len(lines) == 0 {
			return errNotYet
		}
		line = lines[0]
		return nil
	})
	if err != nil {
		t.Fatalf("no access log line for %s in:\n%s", requestID, tail(s.Log("envoy-0")))
	}
	return line
}

type notYet struct{}

func (notYet) Error() string { return "not yet" }

var errNotYet error = notYet{}

// ledgerRecords reads every row of a stack's ledger (SQLite in its
// directory), after asking the usage API, which flushes the writer.
func ledgerRecords(t *testing.T, s *stack.Stack) map[string]ledger.Record {
	t.Helper()
	if code, b := admin(t, s, http.MethodGet, "/admin/usage/by-tenant", ""); code != http.StatusOK {
		t.Fatalf("usage API: %d %s", code, b)
	}
	db, err := ledger.OpenSQLite(context.Background(), filepath.Join(s.Dir, "usage.db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string]ledger.Record{}
	for r, err := range db.Records(context.Background(), ledger.Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
		out[r.RequestID] = r
	}
	return out
}

// TestAccessLogCarriesUsage: Envoy's access log line of a request names
// its tenant, models, provider, tokens and cost, as ext_proc computed them,
// in its "switchyard" object; a refused request's line says who was
// refused (nobody, for a bad key).
func TestAccessLogCarriesUsage(t *testing.T) {
	t.Parallel()
	s := shared
	c := client(s, demoKey)
	var resp *http.Response
	got, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "claude-3-5-haiku",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("log me")},
	}, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Header.Get("X-Request-Id")
	line := accessLog(t, s, id)
	rec := ledgerRecords(t, s)[id]
	if line["status"] != 200.0 || line["attempts"] != 1.0 {
		t.Errorf("access log status %v, attempts %v; want 200 and 1", line["status"], line["attempts"])
	}
	want := map[string]any{
		"tenant": "demo", "key": "demo-key", "route": "chat", "requested_model": "claude-3-5-haiku",
		"model": "claude-3-5-haiku", "provider": "anthropic", "attempts": 1.0,
		"input_tokens": float64(got.Usage.PromptTokens), "output_tokens": float64(got.Usage.CompletionTokens),
		"cost_micro_usd": float64(rec.CostMicros), "usage_estimated": false,
	}
	usage, _ := line["switchyard"].(map[string]any)
	for k, v := range want {
		if usage[k] != v {
			t.Errorf("access log switchyard.%s = %v, want %v (line %v)", k, usage[k], v, line)
		}
	}
	if rec.CostMicros == 0 {
		t.Errorf("ledger row %+v has no cost", rec)
	}

	code, rid, _ := post(t, s, "sk-not-a-key", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`)
	line = accessLog(t, s, rid)
	usage, _ = line["switchyard"].(map[string]any)
	if code != 401 || line["status"] != 401.0 || usage["tenant"] != "" || usage["route"] != "chat" {
		t.Errorf("refusal: status %d, access log %v", code, line)
	}
}

// orderedID is the gateway's request ID: the request's start in
// microseconds since the epoch, then Envoy's random UUID.
var orderedID = regexp.MustCompile(`^[0-9]{16}-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// TestRequestIDsAreTimeOrdered: the gateway names each request by its
// start time, then a random UUID, so that the ledger's request_id index
// takes each record at its end; a later request sorts after an earlier
// one, an ID the client sends is not kept, and the ledger and the access
// log name the request as the client's response does.
func TestRequestIDsAreTimeOrdered(t *testing.T) {
	t.Parallel()
	s := shared
	var ids []string
	for i := range 3 {
		code, id, _ := postWith(t, s, demoKey, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"order me"}]}`,
			http.Header{"X-Request-Id": {"00000000000000000-client-chosen-" + strconv.Itoa(i)}})
		if code != 200 || !orderedID.MatchString(id) {
			t.Fatalf("request %d: status %d, x-request-id %q; want 200 and the gateway's time-ordered ID", i, code, id)
		}
		if len(ids) > 0 && id <= ids[len(ids)-1] {
			t.Errorf("request %d's ID %s does not sort after the one before it, %s", i, id, ids[len(ids)-1])
		}
		ids = append(ids, id)
		time.Sleep(time.Millisecond)
	}
	for _, id := range ids {
		if rec := awaitRecord(t, s, id); rec.RequestID != id || rec.Status != 200 {
			t.Errorf("ledger row of %s: %+v", id, rec)
		}
		if line := accessLog(t, s, id); line["status"] != 200.0 {
			t.Errorf("access log line of %s: %v", id, line)
		}
	}
}

// TestLogLinesCarryTheRequestID: every ext_proc line about a request, the
// audit event included, names it. (The per-request "usage" line is at debug
// level since the hot-path work: the ledger row and the audit event carry
// the same figures.)
func TestLogLinesCarryTheRequestID(t *testing.T) {
	t.Parallel()
	s := shared
	code, id, _ := post(t, s, demoKey, `{"model":"gpt-9-ultra","messages":[{"role":"user","content":"hi"}]}`)
	if code != 404 || id == "" {
		t.Fatalf("status %d, request ID %q", code, id)
	}
	var lines []map[string]any
	_ = eventually(5*time.Second, func() error {
		lines = logLines(s, "extproc-0", func(m map[string]any) bool { return m["request_id"] == id })
		if len(lines) < 2 {
			return errNotYet
		}
		return nil
	})
	msgs := map[string]bool{}
	for _, l := range lines {
		msgs[l["msg"].(string)] = true
	}
	for _, want := range []string{"request refused", "request"} {
		if !msgs[want] {
			t.Errorf("no %q line with request_id %s; lines: %v", want, id, lines)
		}
	}
}
