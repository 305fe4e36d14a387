package health

import (
	"slices"
	"testing"
	"time"
)

// TestSharedWindows: a model's error rate is judged on every replica's
// attempts. This replica saw few failures; with another replica's, the
// model is degraded here too, and the backup hook hears of it once; when
// the other replica's attempts leave, this replica's own decide again.
// Names not tracked are ignored.
func TestSharedWindows(t *testing.T) {
	f := newFixture(t, DefaultConfig())
	f.Track(map[string][]string{"openai": {"gpt-4o"}})
	var told [][2]string
	f.OnDegraded(func(p, m string) { told = append(told, [2]string{p, m}) })
	f.observeN("openai", "gpt-4o", 30, 200, 100*time.Millisecond)
	if got := f.LocalCounts(); !slices.Equal(got, []ModelCounts{{Provider: "openai", Model: "gpt-4o", Counts: Counts{Requests: 30}}}) {
		t.Fatalf("local counts %+v", got)
	}
	if st := f.model(t, "openai", "gpt-4o").State; st != Healthy {
		t.Fatalf("alone: %v", st)
	}
	f.SetShared([]ModelCounts{
		{Provider: "openai", Model: "gpt-4o", Counts: Counts{Requests: 40, Errors: 4}},
		{Provider: "openai", Model: "gpt-4o", Counts: Counts{Requests: 30, Errors: 3}},
		{Provider: "ghost", Model: "x", Counts: Counts{Requests: 100, Errors: 100}},
	})
	got := f.model(t, "openai", "gpt-4o")
	if got.State != Degraded || got.Stats.Requests != 100 || got.Stats.Errors != 7 {
		t.Fatalf("with the others: %v (%s) %+v", got.State, got.Reason, got.Stats)
	}
	if !slices.Equal(told, [][2]string{{"openai", "gpt-4o"}}) {
		t.Errorf("backup hook told %v", told)
	}
	if a := f.Admit("openai", "gpt-4o", 1); a.Weight != 0.5 {
		t.Errorf("admission %+v, want half weight", a)
	}
	if slices.ContainsFunc(f.Snapshot(), func(p ProviderStatus) bool { return p.Provider == "ghost" }) {
		t.Error("a name another replica sent is tracked")
	}
	f.SetShared(nil)
	if st := f.model(t, "openai", "gpt-4o").State; st != Healthy {
		t.Errorf("the others gone: %v", st)
	}
}
