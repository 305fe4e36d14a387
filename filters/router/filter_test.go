package router

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/state/health"
)

// recordingHealth records observations.
type recordingHealth struct {
	fakeHealth
	seen []health.Observation
}

func (r *recordingHealth) Observe(o health.Observation) { r.seen = append(r.seen, o) }

// TestHealthObservations: every attempt is observed once; a streamed answer
// that started well is observed at its end, with its time to first token.
func TestHealthObservations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		body     string
		outcomes []filters.Outcome
		token    time.Duration // first token after the last attempt reached its provider; 0: none
		want     []health.Observation
	}{
		{
			name:     "whole answer after a failed attempt",
			body:     userMsg("strong", "hi"),
			outcomes: []filters.Outcome{{Done: true, Status: 503}, {Done: true, Status: 200}},
			want: []health.Observation{
				{Provider: "oa", Model: "strong", Status: 503},
				{Provider: "an", Model: "mid", Status: 200},
			},
		},
		{
			name:     "stream observed at its end with its time to first token",
			body:     `{"model":"strong","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			outcomes: []filters.Outcome{{Done: true}, {Done: true, Status: 200}},
			token:    40 * time.Millisecond,
			want: []health.Observation{
				{Provider: "oa", Model: "strong", Failure: health.ConnectFailure},
				{Provider: "an", Model: "mid", Status: 200, TTFT: 40 * time.Millisecond},
			},
		},
		{
			name: "a timeout counts; an attempt the client or gateway ended is ignored",
			body: userMsg("strong", "hi"),
			outcomes: []filters.Outcome{
				{Done: true, Cause: filters.CauseTimeout}, {Done: true, Cause: filters.CauseExcused}, {Done: true, Status: 200},
			},
			want: []health.Observation{
				{Provider: "oa", Model: "strong", Failure: health.Timeout},
				{Provider: "an", Model: "mid", Failure: health.Canceled},
				{Provider: "an", Model: "mid", Status: 200},
			},
		},
		{
			name:     "an attempt that lost a hedge is ignored",
			body:     userMsg("strong", "hi"),
			outcomes: []filters.Outcome{{Done: true, Cause: filters.CauseHedged}, {Done: true, Status: 200}},
			want: []health.Observation{
				{Provider: "oa", Model: "strong", Failure: health.Canceled},
				{Provider: "an", Model: "mid", Status: 200},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := &recordingHealth{}
			r, p := testRouter(t, false, h)
			f := &Filter{router: r, health: h, log: slog.New(slog.DiscardHandler)}
			x := &filters.Exchange{ID: "rid", Policy: p, Route: p.Routes[0], Chat: chat(t, tt.body)}
			if err := f.RequestBody(context.Background(), x); err != nil {
				t.Fatal(err)
			}
			start := time.Unix(100, 0)
			var last *filters.Attempt
			for i, o := range tt.outcomes {
				a, _ := x.NewAttempt(i+1, start)
				// ext_proc's own time before the request left is not the
				// provider's.
				a.Sent = start.Add(5 * time.Millisecond)
				a.Finish(o)
				f.AttemptDone(context.Background(), x, a)
				last = a
			}
			if tt.token > 0 {
				x.Sent.FirstToken = last.Sent.Add(tt.token)
			}
			f.Done(context.Background(), x, nil)
			if len(h.seen) != len(tt.want) {
				t.Fatalf("got %d observations, want %d: %+v", len(h.seen), len(tt.want), h.seen)
			}
			for i, w := range tt.want {
				g := h.seen[i]
				if g.Provider != w.Provider || g.Model != w.Model || g.Status != w.Status || g.Failure != w.Failure || g.TTFT != w.TTFT || g.Quota != -1 {
					t.Errorf("observation %d = %+v, want %+v (quota -1)", i, g, w)
				}
			}
		})
	}
}
