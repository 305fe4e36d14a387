package translate

import (
	"testing"
	"time"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
)

// TestHedgeLosses: an attempt a hedge's winner beat is charged what its
// provider may bill (its prompt, and for a whole answer the winner's
// length within its own cap), at its own prices; one that never left, or
// that failed on its own, is not.
func TestHedgeLosses(t *testing.T) {
	t.Parallel()
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(accountPolicy)}})
	if err != nil {
		t.Fatal(err)
	}
	gpt, claude := p.Model("gpt"), p.Model("claude")
	winner := filters.Usage{Known: true, PromptTokens: 40, CompletionTokens: 300}
	sent := time.Unix(10, 0)
	tests := []struct {
		name   string
		body   string
		loser  filters.Outcome
		unsent bool
		want   int64
	}{
		// 40×2.5 + 300×10 µ$ at gpt's prices.
		{name: "whole answer: prompt and the winner's length", body: `{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
			loser: filters.Outcome{Done: true, Cause: filters.CauseHedged}, want: 3100},
		// Capped at 100 output tokens: 40×2.5 + 100×10.
		{name: "whole answer: within the loser's own cap", body: `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`,
			loser: filters.Outcome{Done: true, Cause: filters.CauseHedged}, want: 1100},
		{name: "stream: its prompt only", body: `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			loser: filters.Outcome{Done: true, Cause: filters.CauseHedged}, want: 100},
		{name: "never reached its provider", body: `{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
			loser: filters.Outcome{Done: true, Cause: filters.CauseHedged}, unsent: true},
		{name: "failed on its own: not the hedge's", body: `{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
			loser: filters.Outcome{Done: true, Status: 500}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := openaiapi.ParseChatRequest([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			x := &filters.Exchange{Chat: c, Plan: []filters.Target{{Model: gpt}, {Model: claude}}, Hedge: &filters.Hedge{After: time.Second}}
			lost, _ := x.NewAttempt(1, sent)
			if !tt.unsent {
				lost.MarkSent(sent)
			}
			lost.Finish(tt.loser)
			won, _ := x.NewAttempt(2, sent.Add(time.Second))
			won.MarkSent(sent.Add(time.Second))
			x.SetAnswered(2)
			if got := LostMicros(x, winner); got != tt.want {
				t.Errorf("charged %d µ$, want %d", got, tt.want)
			}
		})
	}
}
