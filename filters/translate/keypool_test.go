package translate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
)

// TestSecretNeverPrints: a provider key in a log attribute, an error or a
// formatted struct prints [redacted].
func TestSecretNeverPrints(t *testing.T) {
	const key = "sk-live-0123456789"
	s := secret(key)
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("msg", slog.Any("key", s), "also", s)
	tests := []struct{ name, got string }{
		{"Sprint", fmt.Sprint(s)},
		{"verbs", fmt.Sprintf("%s %v %q %x %X %+v %#v %10s", s, s, s, s, s, s, s, s)},
		{"in a struct", fmt.Sprintf("%v %+v %#v", struct{ K secret }{s}, struct{ K secret }{s}, struct{ K secret }{s})},
		{"in an error", fmt.Errorf("provider refused %v", s).Error()},
		{"slog", logged.String()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Contains(tc.got, key) || !strings.Contains(tc.got, redacted) {
				t.Errorf("got %q, want [redacted] and no key", tc.got)
			}
		})
	}
	if string(s) != key {
		t.Errorf("string(s) = %q, want the key", string(s))
	}
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type envSecrets map[string]string

func (e envSecrets) Resolve(ref policy.SecretRef) (string, error) { return e[ref.Env], nil }

const poolPolicy = `
providers:
  - {name: oa, kind: openai, base_url: "http://127.0.0.1:1", api_keys: [{env: K1}, {env: K2}, {env: K3}]}
models:
  - {name: gpt, provider: oa, context_window: 100000, max_output_tokens: 4000, price_usd_per_mtok: {input: 1, output: 2}}
routes:
  - {name: chat, path: /v1/chat/completions, api: chat_completions}
`

// TestKeyPool sends attempts one after another through the filter and
// answers each with a status; keys refused with 401 or 429 rest.
func TestKeyPool(t *testing.T) {
	type step struct {
		wait    time.Duration // before the attempt
		status  int
		header  filters.Headers
		wantKey string
	}
	tests := []struct {
		name    string
		steps   []step
		wantLog []string // the "for" of each rest logged
	}{
		{
			name: "keys take turns",
			steps: []step{
				{status: 200, wantKey: "k1"}, {status: 200, wantKey: "k2"}, {status: 200, wantKey: "k3"}, {status: 200, wantKey: "k1"},
			},
		},
		{
			name: "a 429 rests the key for its retry-after",
			steps: []step{
				{status: 429, header: filters.Headers{{Key: "retry-after", Value: "30"}}, wantKey: "k1"},
				{status: 200, wantKey: "k2"}, {status: 200, wantKey: "k3"}, {status: 200, wantKey: "k2"}, // k1's turn, resting
				{wait: 31 * time.Second, status: 200, wantKey: "k2"}, {status: 200, wantKey: "k3"}, {status: 200, wantKey: "k1"},
			},
			wantLog: []string{"30s"},
		},
		{
			name: "a 401 rests the key a minute; a 500 does not rest it",
			steps: []step{
				{status: 401, wantKey: "k1"}, {status: 500, wantKey: "k2"}, {status: 200, wantKey: "k3"},
				{wait: 59 * time.Second, status: 200, wantKey: "k2"}, // k1's turn, resting
				{status: 200, wantKey: "k2"}, {status: 200, wantKey: "k3"},
				{wait: time.Second, status: 200, wantKey: "k1"},
			},
			wantLog: []string{"1m0s"},
		},
		{
			name: "when every key rests, the one that rests least is used",
			steps: []step{
				{status: 429, header: filters.Headers{{Key: "retry-after-ms", Value: "5000"}}, wantKey: "k1"},
				{status: 429, header: filters.Headers{{Key: "retry-after", Value: "2"}}, wantKey: "k2"},
				{status: 429, header: filters.Headers{{Key: "retry-after", Value: "9"}}, wantKey: "k3"},
				{status: 200, wantKey: "k2"},
			},
			wantLog: []string{"5s", "2s", "9s"},
		},
	}
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(poolPolicy)}})
	if err != nil {
		t.Fatal(err)
	}
	secrets := envSecrets{"K1": "k1", "K2": "k2", "K3": "k3"}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logged bytes.Buffer
			c := &clock{t: time.Date(2026, 3, 15, 13, 0, 0, 0, time.UTC)}
			ff, err := New(policy.FilterRef{Name: "translate"}, filters.Deps{Policy: p, Secrets: secrets, Logger: slog.New(slog.NewJSONHandler(&logged, nil))})
			if err != nil {
				t.Fatal(err)
			}
			f := ff.(*Filter)
			pool, err := newKeyPool(p.Providers[0], secrets, newCooldowns(), c.now)
			if err != nil {
				t.Fatal(err)
			}
			f.pools["oa"] = pool
			body := `{"model":"gpt","messages":[{"role":"user","content":"hi"}]}`
			chat, perr := openaiapi.ParseChatRequest([]byte(body))
			if perr != nil {
				t.Fatal(perr)
			}
			x := &filters.Exchange{ID: "r", Policy: p, Route: p.Routes[0], Chat: chat, Body: []byte(body), Plan: []filters.Target{{Model: p.Model("gpt")}}}
			var got, want []string
			for i, s := range tc.steps {
				c.advance(s.wait)
				a, _ := x.NewAttempt(i+1, c.now())
				if err := f.Attempt(context.Background(), x, a); err != nil {
					t.Fatal(err)
				}
				got = append(got, strings.TrimPrefix(a.Upstream.Header.Get("authorization"), "Bearer "))
				want = append(want, s.wantKey)
				a.Finish(filters.Outcome{Done: true, Status: s.status, Header: s.header})
				f.AttemptDone(context.Background(), x, a)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("keys used (-want +got):\n%s", diff)
			}
			var rests []string
			dec := json.NewDecoder(&logged)
			for {
				var line map[string]any
				if err := dec.Decode(&line); err != nil {
					break
				}
				for _, v := range line {
					if s := fmt.Sprint(v); s == "k1" || s == "k2" || s == "k3" {
						t.Errorf("a key in the log: %v", line)
					}
				}
				ns, _ := line["for"].(float64)
				rests = append(rests, time.Duration(ns).String())
			}
			if diff := cmp.Diff(tc.wantLog, rests); diff != "" {
				t.Errorf("rests logged (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRefusedAttemptLetsGoOfItsKey: an attempt whose translation is refused
// is never sent and gets no AttemptDone, so the filter must not keep the
// key it picked for it (a leak per refused request).
func TestRefusedAttemptLetsGoOfItsKey(t *testing.T) {
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(poolPolicy)}})
	if err != nil {
		t.Fatal(err)
	}
	ff, err := New(policy.FilterRef{Name: "translate"}, filters.Deps{Policy: p, Secrets: envSecrets{"K1": "k1", "K2": "k2", "K3": "k3"}})
	if err != nil {
		t.Fatal(err)
	}
	f := ff.(*Filter)
	chat, perr := openaiapi.ParseChatRequest([]byte(`{"model":"gpt","messages":[{"role":"user","content":"hi"}]}`))
	if perr != nil {
		t.Fatal(perr)
	}
	// The body is not the object chat was parsed from: the translator
	// refuses it after the key is picked.
	x := &filters.Exchange{ID: "r", Policy: p, Route: p.Routes[0], Chat: chat, Body: []byte(`[]`), Plan: []filters.Target{{Model: p.Model("gpt")}}}
	for i := range 3 {
		a, _ := x.NewAttempt(i+1, time.Now())
		if err := f.Attempt(context.Background(), x, a); err == nil {
			t.Fatal("the translator took a body that is not an object")
		}
	}
	n := 0
	f.used.Range(func(any, any) bool { n++; return true })
	if n != 0 {
		t.Errorf("%d key uses kept for refused attempts, want 0", n)
	}
}

// TestUnsetKeyRefusesThePolicy: a key whose variable is unset or whose file
// is empty refuses the policy at load, naming where the key was to come
// from; a provider configured without keys loads and sends none.
func TestUnsetKeyRefusesThePolicy(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ keys, want string }{
		{`api_keys: [{env: K1}, {env: UNSET}]`, "environment variable UNSET is unset or empty"},
		{`api_key: {env: BLANK}`, "environment variable BLANK is unset or empty"},
		{`api_key: {file: "` + empty + `"}`, "file " + empty + " is empty"},
		{``, ""},
	}
	for _, tc := range tests {
		t.Run(tc.keys, func(t *testing.T) {
			p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(strings.Replace(poolPolicy, "api_keys: [{env: K1}, {env: K2}, {env: K3}]", tc.keys, 1))}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = New(policy.FilterRef{Name: "translate"}, filters.Deps{Policy: p, Secrets: fileOrEnv{envSecrets{"K1": "k1", "BLANK": ""}}})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// fileOrEnv reads file references from disk and the rest from env.
type fileOrEnv struct{ env envSecrets }

func (s fileOrEnv) Resolve(ref policy.SecretRef) (string, error) {
	if ref.File != "" {
		b, err := os.ReadFile(ref.File)
		return strings.TrimSpace(string(b)), err
	}
	return s.env.Resolve(ref)
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 15, 13, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header filters.Headers
		want   time.Duration
	}{
		{"nothing said", nil, time.Minute},
		{"seconds", filters.Headers{{Key: "retry-after", Value: "12"}}, 12 * time.Second},
		{"milliseconds win", filters.Headers{{Key: "retry-after", Value: "12"}, {Key: "retry-after-ms", Value: "1500"}}, 1500 * time.Millisecond},
		{"an HTTP date", filters.Headers{{Key: "retry-after", Value: now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second},
		{"a date in the past", filters.Headers{{Key: "retry-after", Value: now.Add(-time.Hour).Format(http.TimeFormat)}}, time.Minute},
		{"garbage", filters.Headers{{Key: "retry-after", Value: "soon"}}, time.Minute},
		{"capped", filters.Headers{{Key: "retry-after", Value: "86400"}}, time.Hour},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := retryAfter(tc.header, now); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}
