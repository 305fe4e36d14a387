package filters

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
)

func TestParseTags(t *testing.T) {
	t.Parallel()
	many := make([]string, policy.MaxTags+1)
	for i := range many {
		many[i] = fmt.Sprintf("k%d=v", i)
	}
	tests := []struct {
		name    string
		in      string
		want    map[string]string
		wantErr string
	}{
		{"one", "team=search", map[string]string{"team": "search"}, ""},
		{"several, spaced", " team = search , env=prod", map[string]string{"team": "search", "env": "prod"}, ""},
		{"a value with an equals sign", "expr=a=b", map[string]string{"expr": "a=b"}, ""},
		{"the most", strings.Join(many[:policy.MaxTags], ","), nil, ""},
		{"too many", strings.Join(many, ","), nil, "at most 16 tags"},
		{"not key=value", "team", nil, `"team" is not key=value`},
		{"an empty entry", "team=search,,env=prod", nil, "is not key=value"},
		{"a key twice", "team=a,team=b", nil, "tag team is given twice"},
		{"an empty value", "team=", nil, "value of 1 to"},
		{"a bad key", "cost center=1", nil, "tag key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseTags(tt.in)
			if tt.wantErr != "" {
				var e *openaiapi.Error
				if !errors.As(err, &e) || e.Status != 400 || e.Param != HeaderTags || !strings.Contains(e.Message, tt.wantErr) {
					t.Fatalf("ParseTags(%q) = %v, want a 400 naming %s with %q", tt.in, err, HeaderTags, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.want != nil && !maps.Equal(got, tt.want) {
				t.Errorf("ParseTags(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

// tagsPolicy has a route that takes tags from metadata for each API that
// has metadata, and one that does not.
const tagsPolicy = `
providers:
  - {name: oa, kind: openai, base_url: "http://127.0.0.1:1"}
models:
  - {name: m, provider: oa, context_window: 100000, max_output_tokens: 1000, price_usd_per_mtok: {input: 1, output: 1}}
routes:
  - {name: chat, path: /v1/chat/completions, api: chat_completions, tags_from_metadata: true}
  - {name: messages, path: /v1/messages, api: messages, tags_from_metadata: true}
  - {name: responses, path: /v1/responses, api: responses, tags_from_metadata: true}
  - {name: plain, path: /v2/chat/completions, api: chat_completions}
tenants:
  - name: acme
    keys: [{name: k, sha256: 0000000000000000000000000000000000000000000000000000000000000000, tags: {team: search, env: prod}}]
`

// tagged parses body on route with the caller's key and the two
// headers, as auth and the chain do.
func tagged(t *testing.T, route, body, tagsHeader, sessionHeader string) (*Exchange, error) {
	t.Helper()
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(tagsPolicy)}})
	if err != nil {
		t.Fatal(err)
	}
	x := &Exchange{ID: "r", Policy: p, Body: []byte(body)}
	for _, r := range p.Routes {
		if r.Name == route {
			x.Route = r
		}
	}
	if err := x.SetLabels(p.Tenants[0].Keys[0], tagsHeader, sessionHeader); err != nil {
		return x, err
	}
	return x, NewChain(nil).RequestBody(context.Background(), x)
}

// TestLabels: a request's tags are its key's, the body's metadata's over
// them where the route takes it, and the header's over both; bounds are
// refused naming the header or the field.
func TestLabels(t *testing.T) {
	t.Parallel()
	const chat = `{"model":"m","messages":[{"role":"user","content":"hi"}]%s}`
	tests := []struct {
		name, route, body, tags, session string
		want                             map[string]string
		wantSession                      string
		wantParam                        string // of the refusal
	}{
		{"the key's", "chat", fmt.Sprintf(chat, ""), "", "", map[string]string{"team": "search", "env": "prod"}, "", ""},
		{"the header's over the key's", "chat", fmt.Sprintf(chat, ""), "team=ads,feature=x", "", map[string]string{"team": "ads", "env": "prod", "feature": "x"}, "", ""},
		{"metadata over the key's, under the header's", "chat", fmt.Sprintf(chat, `,"metadata":{"team":"infra","env":"dev"}`), "env=staging", "",
			map[string]string{"team": "infra", "env": "staging"}, "", ""},
		{"metadata of a route that takes none", "plain", fmt.Sprintf(chat, `,"metadata":{"team":"infra"}`), "", "",
			map[string]string{"team": "search", "env": "prod"}, "", ""},
		{"Responses metadata", "responses", `{"model":"m","input":"hi","metadata":{"feature":"summarize"}}`, "", "",
			map[string]string{"team": "search", "env": "prod", "feature": "summarize"}, "", ""},
		{"Messages metadata besides user_id", "messages", `{"model":"m","max_tokens":5,"metadata":{"user_id":"u1","feature":"code"},"messages":[{"role":"user","content":"hi"}]}`, "", "",
			map[string]string{"team": "search", "env": "prod", "feature": "code"}, "", ""},
		{"a session from the header", "chat", fmt.Sprintf(chat, ""), "", "run-42", map[string]string{"team": "search", "env": "prod"}, "run-42", ""},
		{"Claude Code's session", "messages",
			`{"model":"m","max_tokens":5,"metadata":{"user_id":"{\"device_id\":\"d\",\"account_uuid\":\"\",\"session_id\":\"d9194fc7-8693-41a9-87d3-22c2adba20dc\"}"},"messages":[{"role":"user","content":"hi"}]}`,
			"", "", map[string]string{"team": "search", "env": "prod"}, "d9194fc7-8693-41a9-87d3-22c2adba20dc", ""},
		{"the header's session over Claude Code's", "messages",
			`{"model":"m","max_tokens":5,"metadata":{"user_id":"{\"session_id\":\"from-body\"}"},"messages":[{"role":"user","content":"hi"}]}`,
			"", "from-header", map[string]string{"team": "search", "env": "prod"}, "from-header", ""},
		{"a plain user_id is no session", "messages",
			`{"model":"m","max_tokens":5,"metadata":{"user_id":"user-7"},"messages":[{"role":"user","content":"hi"}]}`,
			"", "", map[string]string{"team": "search", "env": "prod"}, "", ""},
		{"Claude Code's malformed session is left out", "messages",
			`{"model":"m","max_tokens":5,"metadata":{"user_id":"{\"session_id\":\"has space\"}"},"messages":[{"role":"user","content":"hi"}]}`,
			"", "", map[string]string{"team": "search", "env": "prod"}, "", ""},
		{"a bad session header", "chat", fmt.Sprintf(chat, ""), "", "has space", nil, "", HeaderSession},
		{"a bad tags header", "chat", fmt.Sprintf(chat, ""), "team", "", nil, "", HeaderTags},
		{"a bad metadata tag", "chat", fmt.Sprintf(chat, `,"metadata":{"team":"a,b"}`), "", "", nil, "", "metadata"},
		{"a Messages metadata tag that is no string", "messages", `{"model":"m","max_tokens":5,"metadata":{"n":5},"messages":[{"role":"user","content":"hi"}]}`, "", "", nil, "", "metadata"},
		{"too many with the key's", "chat", fmt.Sprintf(chat, ""), "a=1,b=2,c=3,d=4,e=5,f=6,g=7,h=8,i=9,j=10,k=11,l=12,m=13,n=14,o=15", "", nil, "", HeaderTags},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			x, err := tagged(t, tt.route, tt.body, tt.tags, tt.session)
			if tt.wantParam != "" {
				var e *openaiapi.Error
				if !errors.As(err, &e) || e.Status != 400 || e.Param != tt.wantParam {
					t.Fatalf("got %v, want a 400 naming %s", err, tt.wantParam)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(x.Labels.Tags, tt.want) || x.Session() != tt.wantSession {
				t.Errorf("tags %v, session %q; want %v, %q", x.Labels.Tags, x.Session(), tt.want, tt.wantSession)
			}
		})
	}
}

// TestDropMetadataTags: the metadata tags were taken from leaves the body
// for the provider, the rest byte for byte; Messages keep their user_id;
// the client's body is what the audit trail hashes.
func TestDropMetadataTags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, route, body, want string
	}{
		{"chat", "chat", `{"model":"m","metadata":{"team":"x"},"messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"m","messages":[{"role":"user","content":"hi"}]}`},
		{"Responses", "responses", `{"model":"m","input":"hi","metadata":{"team":"x"}}`, `{"model":"m","input":"hi"}`},
		{"Messages keep user_id", "messages", `{"model":"m","max_tokens":5,"metadata":{"user_id":"u1","team":"x"},"messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"m","max_tokens":5,"metadata":{"user_id":"u1"},"messages":[{"role":"user","content":"hi"}]}`},
		{"Messages with user_id alone: untouched", "messages", `{"model":"m","max_tokens":5,"metadata":{"user_id":"u1"},"messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"m","max_tokens":5,"metadata":{"user_id":"u1"},"messages":[{"role":"user","content":"hi"}]}`},
		{"a route that takes no tags: untouched", "plain", `{"model":"m","metadata":{"team":"x"},"messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"m","metadata":{"team":"x"},"messages":[{"role":"user","content":"hi"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			x, err := tagged(t, tt.route, tt.body, "", "")
			if err != nil {
				t.Fatal(err)
			}
			if err := x.DropMetadataTags(); err != nil {
				t.Fatal(err)
			}
			if string(x.Body) != tt.want || string(x.ClientBody()) != tt.body {
				t.Errorf("body %s (the client's %s); want %s (the client's %s)", x.Body, x.ClientBody(), tt.want, tt.body)
			}
		})
	}
}

// FuzzParseTags: whatever a client sends, the tags accepted are within
// the bounds, and a refusal names the header.
func FuzzParseTags(f *testing.F) {
	for _, s := range []string{"team=search", " a = b , c=d", "x", "a=1,a=2", "k=\x00", "=v", strings.Repeat("k=v,", 20)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		tags, err := ParseTags(in)
		if err != nil {
			var e *openaiapi.Error
			if !errors.As(err, &e) || e.Param != HeaderTags {
				t.Fatalf("ParseTags(%q): %v, not a refusal naming the header", in, err)
			}
			return
		}
		if len(tags) == 0 || len(tags) > policy.MaxTags {
			t.Fatalf("ParseTags(%q) = %d tags", in, len(tags))
		}
		for k, v := range tags {
			if why := policy.TagProblem(k, v); why != "" {
				t.Fatalf("ParseTags(%q) accepted %s=%s: %s", in, k, v, why)
			}
		}
	})
}
