package filters

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"testing"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/translator"
)

// TestReleaseRequest: once an answer streams, the exchange lets go of the
// client's body and the one rewritten for providers, keeping the hash the
// audit trail reads, unless an attempt is still being translated; every
// attempt's translated body goes as soon as it is sent.
func TestReleaseRequest(t *testing.T) {
	t.Parallel()
	client := []byte(`{"model":"m","metadata":{"team":"x"},"messages":[{"role":"user","content":"hi"}]}`)
	sum := sha256.Sum256(client)
	wantSum := hex.EncodeToString(sum[:])
	tests := []struct {
		name string
		// attempts are the attempts made before the answer: sent, or
		// settled without being sent, or neither (still translating).
		attempts    []string
		wantRelease bool
	}{
		{"one attempt, sent", []string{"sent"}, true},
		{"a retry after a failure", []string{"sent", "sent"}, true},
		{"an attempt refused before it was sent", []string{"sent", "settled"}, true},
		{"a hedge's loser still translating", []string{"sent", "translating"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			x := &Exchange{Body: client, Plan: []Target{{Model: &policy.Model{Name: "m"}}}}
			x.ReplaceBody([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
			var attempts []*Attempt
			for _, state := range tt.attempts {
				a, ok := x.NewAttempt(0, time.Now())
				if !ok {
					t.Fatal("attempt refused")
				}
				a.Upstream = translator.Upstream{Path: "/v1/chat/completions", Body: []byte(`{"model":"m-upstream"}`)}
				switch state {
				case "sent":
					a.MarkSent(time.Now())
					if a.Upstream.Body != nil {
						t.Errorf("attempt %d kept its translated body once sent", a.N)
					}
				case "settled":
					a.Finish(Outcome{Status: 400})
				}
				attempts = append(attempts, a)
			}
			if got := x.ReleaseRequest(); got != tt.wantRelease {
				t.Fatalf("ReleaseRequest() = %v, want %v", got, tt.wantRelease)
			}
			if got := x.RequestReleased(); got != tt.wantRelease {
				t.Errorf("RequestReleased() = %v, want %v", got, tt.wantRelease)
			}
			if got := x.ClientBodySHA256(); got != wantSum {
				t.Errorf("ClientBodySHA256() = %s, want the client's body's %s", got, wantSum)
			}
			if tt.wantRelease {
				if x.Body != nil || x.ClientBody() != nil {
					t.Errorf("bodies kept: %s, the client's %s", x.Body, x.ClientBody())
				}
				return
			}
			if x.Body == nil || string(x.ClientBody()) != string(client) {
				t.Errorf("the body went while an attempt may read it: %s, the client's %s", x.Body, x.ClientBody())
			}
			// Once that attempt is sent, the next try lets go.
			attempts[len(attempts)-1].MarkSent(time.Now())
			if !x.ReleaseRequest() || x.Body != nil || x.ClientBodySHA256() != wantSum {
				t.Errorf("not released once every attempt was sent: body %s, sum %s", x.Body, x.ClientBodySHA256())
			}
		})
	}
}

// TestRemoveRequestHeader: a header the client sent is removed; one it did
// not send is not asked for, since every removal costs Envoy a search.
func TestRemoveRequestHeader(t *testing.T) {
	x := &Exchange{Header: Headers{{Key: "authorization", Value: "Bearer k"}}}
	x.RemoveRequestHeader("authorization")
	x.RemoveRequestHeader("x-api-key")
	if _, removed := x.TakeRequestMutations(); !slices.Equal(removed, []string{"authorization"}) {
		t.Errorf("removed %v, want [authorization]", removed)
	}
}
