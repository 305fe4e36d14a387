package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
)

// TestProviderTimed: a failed attempt that ended at the per-try timeout is
// the provider's only when the provider itself had (nearly) all of it.
func TestProviderTimed(t *testing.T) {
	t0 := time.Unix(1000, 0)
	x := &filters.Exchange{Route: &policy.Route{PerTryIdleTimeout: 10 * time.Second}}
	tests := []struct {
		name      string
		sentAfter time.Duration // 0: never sent
		endAfter  time.Duration
		want      filters.Cause
	}{
		{"refused at once", time.Millisecond, 2 * time.Millisecond, filters.CauseConnect},
		{"refused before ext_proc answered", 0, time.Millisecond, filters.CauseConnect},
		{"silent for the whole timeout", time.Millisecond, 10 * time.Second, filters.CauseTimeout},
		{"timed out while ext_proc held the request", 4 * time.Second, 10 * time.Second, filters.CauseExcused},
		{"timed out before ext_proc answered", 0, 10 * time.Second, filters.CauseExcused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &filters.Attempt{Started: t0}
			if tt.sentAfter > 0 {
				a.Sent = t0.Add(tt.sentAfter)
			}
			if got := providerTimed(x, a, t0.Add(tt.endAfter)); got != tt.want {
				t.Errorf("cause %v, want %v", got, tt.want)
			}
		})
	}
}

// TestUnfinished: an answer cut after its headers is the provider's
// timeout only when Envoy's per-try idle timeout cut it (Envoy's cut log
// names it, after a silence that long) or its bound has (nearly) run:
// answer_timeout for a whole answer, stream_timeout and a per-try idle
// timeout more for a stream (ext_proc cuts it first; Envoy is the
// backstop). Otherwise, or before any headers, the client left.
func TestUnfinished(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tests := []struct {
		name      string
		status    int
		streaming bool
		endAfter  time.Duration
		silent    time.Duration // since the last byte
		cut       bool          // Envoy's cut log names the request
		timedOut  bool
	}{
		{"body unfinished at answer_timeout", 200, false, 3 * time.Second, 3 * time.Second, false, true},
		{"client left while the body came", 200, false, time.Second, time.Second, false, false},
		{"stream stalled: cut by the per-try idle timeout", 200, true, 2 * time.Second, time.Second, true, true},
		{"whole answer stalled after its headers", 200, false, time.Second, time.Second, true, true},
		{"client left mid-stream while events flowed", 200, true, 2 * time.Second, 10 * time.Millisecond, false, false},
		{"client left mid-stream in a silence", 200, true, 2 * time.Second, 950 * time.Millisecond, false, false},
		{"a cut logged does not blame a client that left while events flowed", 200, true, 2 * time.Second, 10 * time.Millisecond, true, false},
		{"stream past stream_timeout: Envoy's backstop", 200, true, 6 * time.Second, 10 * time.Millisecond, false, true},
		{"stream ended within its bound", 200, true, 3 * time.Second, 10 * time.Millisecond, false, false},
		{"no headers yet", 0, false, 3 * time.Second, 3 * time.Second, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			x := &filters.Exchange{Route: &policy.Route{PerTryIdleTimeout: time.Second, AnswerTimeout: 3 * time.Second, StreamTimeout: 5 * time.Second}, Plan: make([]filters.Target, 1)}
			a, _ := x.NewAttempt(1, t0)
			a.Sent = t0
			a.Finish(filters.Outcome{Status: tt.status})
			x.Response.Status = tt.status
			end := t0.Add(tt.endAfter)
			s := &Server{now: func() time.Time { return end }}
			lv := &live{x: x, chain: &filters.Chain{}, streaming: tt.streaming, lastByte: end.Add(-tt.silent)}
			lv.cutByEnvoy.Store(tt.cut)
			err := s.unfinished(context.Background(), lv)
			if got := !errors.Is(err, ErrClientGone); got != tt.timedOut {
				t.Fatalf("provider timeout %v (%v), want %v", got, err, tt.timedOut)
			}
			o := a.Outcome()
			if tt.timedOut && (o.Status != 0 || o.Cause != filters.CauseTimeout || x.Response.Status != 504) {
				t.Errorf("outcome %+v, response %d: want the attempt amended to a timeout and a 504", o, x.Response.Status)
			}
			if !tt.timedOut && o.Status != tt.status {
				t.Errorf("outcome %+v amended though the client left", o)
			}
		})
	}
}
