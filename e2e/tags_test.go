package e2e

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard/switchyard/state/events"
	"github.com/switchyard/switchyard/state/ledger/report"
)

// claudeCodeUserID is metadata.user_id as Claude Code sends it.
const claudeCodeUserID = `{"device_id":"20e3ecdaba7adc21315822cf1b9106460cc35e322eb2a886107061a0318fce03","account_uuid":"","session_id":"d9194fc7-8693-41a9-87d3-22c2adba20dc"}`

// TestTagsAndSessions: a request's tags (its key's, the header's, its
// body's metadata on a route that takes it) and its session (the header,
// or Claude Code's) reach its ledger row and its usage event, the usage
// API groups and filters by them, the metadata they came from never
// reaches the provider, and tags or sessions past their bounds are
// refused in the client's envelope naming the header or field.
func TestTagsAndSessions(t *testing.T) {
	s := options(t)
	since := "from=" + time.Now().Add(-time.Second).UTC().Format(time.RFC3339Nano)
	type sent struct {
		name, path, body string
		header           []string
		wantTags         map[string]string
		wantSession      string
		provider         string         // whose last request to read
		wantMetadata     map[string]any // what of metadata reached it; nil: none
	}
	cases := []sent{
		{name: "the key's tags and the header's", path: "/v1/chat/completions",
			body:     `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`,
			header:   []string{"X-Switchyard-Tags", "feature=summarize, env=prod", "X-Switchyard-Session", "run-42"},
			wantTags: map[string]string{"team": "search", "feature": "summarize", "env": "prod"}, wantSession: "run-42",
			provider: "openai"},
		{name: "chat metadata, kept from OpenAI", path: "/v1/chat/completions",
			body:     `{"model":"gpt-4o-mini","metadata":{"team":"ads","feature":"chat"},"messages":[{"role":"user","content":"hi"}]}`,
			wantTags: map[string]string{"team": "ads", "feature": "chat"},
			provider: "openai"},
		{name: "Claude Code's session, and Messages metadata kept from Anthropic but user_id", path: "/v1/messages",
			body: `{"model":"claude-3-5-haiku","max_tokens":20,"metadata":{"user_id":` + jsonString(claudeCodeUserID) +
				`,"feature":"code"},"messages":[{"role":"user","content":"hi"}]}`,
			wantTags: map[string]string{"team": "search", "feature": "code"}, wantSession: "d9194fc7-8693-41a9-87d3-22c2adba20dc",
			provider: "anthropic", wantMetadata: map[string]any{"user_id": claudeCodeUserID}},
	}
	ids := map[string]sent{}
	for _, c := range cases {
		a := postTo(t, s, c.path, taggedKey, c.body, c.header...)
		if a.status != http.StatusOK {
			t.Fatalf("%s: %d %s", c.name, a.status, a.body)
		}
		ids[a.header.Get("X-Request-Id")] = c
		meta, ok := lastBody(t, s, c.provider)["metadata"]
		if (c.wantMetadata == nil) != !ok || (ok && !mapsEqualAny(meta.(map[string]any), c.wantMetadata)) {
			t.Errorf("%s: %s got metadata %v, want %v", c.name, c.provider, meta, c.wantMetadata)
		}
	}

	rows := ledgerRecords(t, s)
	for id, c := range ids {
		r, ok := rows[id]
		if !ok {
			t.Errorf("%s: no ledger row %s", c.name, id)
			continue
		}
		if !maps.Equal(r.Tags, c.wantTags) || r.SessionID != c.wantSession {
			t.Errorf("%s: ledger row tags %v, session %q; want %v, %q", c.name, r.Tags, r.SessionID, c.wantTags, c.wantSession)
		}
	}
	t.Run("usage events", func(t *testing.T) {
		rc := redis.NewClient(&redis.Options{Addr: s.RedisAddr})
		defer rc.Close()
		found := map[string]events.Usage{}
		err := eventually(10*time.Second, func() error {
			msgs, err := rc.XRange(context.Background(), events.Key("sy", optionsStream), "-", "+").Result()
			if err != nil {
				return err
			}
			for _, m := range msgs {
				if e, err := events.Decode(m.Values); err == nil {
					found[e.RequestID] = e
				}
			}
			for id := range ids {
				if _, ok := found[id]; !ok {
					return errNotYet
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("events of the tagged requests: %v", err)
		}
		for id, c := range ids {
			if e := found[id]; !maps.Equal(e.Tags, c.wantTags) || e.SessionID != c.wantSession {
				t.Errorf("%s: event tags %v, session %q; want %v, %q", c.name, e.Tags, e.SessionID, c.wantTags, c.wantSession)
			}
		}
	})

	t.Run("the usage API by tag and by session", func(t *testing.T) {
		get := func(path string) report.Report {
			t.Helper()
			req, _ := http.NewRequest(http.MethodGet, s.URL+path, nil)
			req.Header.Set("Authorization", "Bearer "+taggedKey)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			var rep report.Report
			if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &rep) != nil {
				t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
			}
			return rep
		}
		requests := func(rep report.Report, group func(report.Row) string) map[string]int64 {
			out := map[string]int64{}
			for _, r := range rep.Data {
				out[group(r)] += r.Requests
			}
			return out
		}
		// Every request of tenant tagged since the test began is one of
		// these cases.
		want := map[string]int64{}
		for _, c := range cases {
			want[c.wantTags["feature"]]++
		}
		if got := requests(get("/v1/usage/by-tag?key=feature&"+since), func(r report.Row) string { return r.Tag }); !maps.Equal(got, want) {
			t.Errorf("by feature: %v, want %v", got, want)
		}
		if got := get("/v1/usage?tag=team:search&session=run-42&" + since); got.Total.Requests != 1 {
			t.Errorf("team search's requests of session run-42: %d, want 1", got.Total.Requests)
		}
		got := requests(get("/v1/usage/by-session?"+since), func(r report.Row) string { return r.Session })
		if got["run-42"] != 1 || got["d9194fc7-8693-41a9-87d3-22c2adba20dc"] != 1 {
			t.Errorf("by session: %v, want one request of each session", got)
		}
	})

	t.Run("bounds, in the client's envelope", func(t *testing.T) {
		chat := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`
		msgs := `{"model":"claude-3-5-haiku","max_tokens":20,"messages":[{"role":"user","content":"hi"}]}`
		tests := []struct {
			name, path, body string
			header           []string
			wantParam        string
		}{
			{"a tag without a value", "/v1/chat/completions", chat, []string{"X-Switchyard-Tags", "team"}, "x-switchyard-tags"},
			{"seventeen tags", "/v1/chat/completions", chat, []string{"X-Switchyard-Tags", strings.Repeat("k=v,", 16) + "z=1"}, "x-switchyard-tags"},
			{"a session with a space", "/v1/messages", msgs, []string{"X-Switchyard-Session", "a b"}, "x-switchyard-session"},
			{"a metadata value that is no string", "/v1/messages",
				`{"model":"claude-3-5-haiku","max_tokens":20,"metadata":{"n":1},"messages":[{"role":"user","content":"hi"}]}`, nil, "metadata"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				a := postTo(t, s, tt.path, taggedKey, tt.body, tt.header...)
				var env struct {
					Type  string `json:"type"`
					Error struct {
						Type  string `json:"type"`
						Code  string `json:"code"`
						Param string `json:"param"`
					} `json:"error"`
				}
				_ = json.Unmarshal(a.body, &env)
				anthropicEnvelope := env.Type == "error"
				if a.status != http.StatusBadRequest || env.Error.Type != "invalid_request_error" || anthropicEnvelope != strings.HasPrefix(tt.path, "/v1/messages") {
					t.Fatalf("answer %d %s; want 400 invalid_request_error in the client's envelope", a.status, a.body)
				}
				if !anthropicEnvelope && env.Error.Param != tt.wantParam || !strings.Contains(string(a.body), tt.wantParam) {
					t.Errorf("answer %s does not name %s", a.body, tt.wantParam)
				}
			})
		}
	})
}

// TestTagBudget: the requests carrying a budgeted tag are held to its
// budget: once it is spent one is refused naming the tag, while the
// tenant's requests without the tag are served.
func TestTagBudget(t *testing.T) {
	s := options(t)
	body := `{"model":"gpt-4o-mini","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`
	// A simulated answer's length varies, so its cost does: each request
	// spends a few micro-USD, and at most a hundred reach the budget.
	refused := false
	for i := 0; i < 100 && !refused; i++ {
		a := postTo(t, s, "/v1/chat/completions", taggedKey, body, "X-Switchyard-Tags", "feature=tight")
		switch {
		case a.status == http.StatusTooManyRequests && a.code() == "insufficient_quota":
			if !strings.Contains(string(a.body), "tag feature=tight of tenant tagged") {
				t.Errorf("refusal %s does not name the tag", a.body)
			}
			refused = true
		case a.status != http.StatusOK:
			t.Fatalf("answer %d %s", a.status, a.body)
		}
	}
	if !refused {
		t.Fatal("a hundred requests never spent the tag's 100 micro-USD")
	}
	if a := postTo(t, s, "/v1/chat/completions", taggedKey, body); a.status != http.StatusOK {
		t.Errorf("a request without the tag: %d %s, want it served", a.status, a.body)
	}
}

// jsonString quotes s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// mapsEqualAny compares two decoded JSON objects of strings.
func mapsEqualAny(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
