package server_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/extproc/server"
	"github.com/switchyard/switchyard/filters"
)

// answerer answers a request itself, on the side its name says, as the
// response cache does on a hit, and counts the complete hooks it sees.
type answerer struct {
	onHeaders bool
	completed *atomic.Int32
}

func (answerer) Name() string { return "answerer" }

func (a answerer) RequestHeaders(_ context.Context, x *filters.Exchange) error {
	if a.onHeaders {
		x.Respond(http.StatusOK, []byte(`{"object":"list","data":[]}`))
	}
	return nil
}

func (a answerer) RequestBody(_ context.Context, x *filters.Exchange) error {
	x.Respond(http.StatusOK, []byte(`{"id":"chatcmpl-cached"}`))
	return nil
}

func (a answerer) Complete(_ context.Context, x *filters.Exchange) {
	if x.Response.Status != http.StatusOK {
		panic("complete before the reply's status was set")
	}
	a.completed.Add(1)
}

// TestOwnRepliesComplete: an answer a filter makes itself runs the
// complete hooks before it leaves, as a provider's answer does, so the
// usage filter holds its record on disk before the client has it (a
// kill -9 right after would otherwise lose the row of a served request).
func TestOwnRepliesComplete(t *testing.T) {
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(testPolicy)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name      string
		onHeaders bool
	}{{"reply on the request headers", true}, {"reply on the request body", false}} {
		t.Run(tt.name, func(t *testing.T) {
			var completed atomic.Int32
			chain := filters.NewChain([]filters.Filter{answerer{onHeaders: tt.onHeaders, completed: &completed}})
			h := serve(t, &server.Runtime{Policy: p, Chains: map[string]*filters.Chain{"chat": chain}})
			s := h.stream(t, "")
			resp := send(t, s, reqHeaders("rid-own", "Bearer sk-local-demo"))
			if !tt.onHeaders {
				resp = send(t, s, bodyMsg(`{"model":"mini","messages":[{"role":"user","content":"hi"}]}`))
			}
			if got := resp.GetImmediateResponse().GetStatus().GetCode(); int(got) != http.StatusOK {
				t.Fatalf("reply status %v, want 200: %v", got, resp)
			}
			if n := completed.Load(); n != 1 {
				t.Errorf("complete hooks ran %d times before the reply left, want 1", n)
			}
			closeAndWait(t, s)
		})
	}
}
