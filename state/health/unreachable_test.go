package health

import (
	"testing"
	"time"
)

// TestUnreachable: a provider whose attempts or checks fail below HTTP is
// unreachable from the first of them, with the last one's reason, until
// anything answers; a timeout or a reset changes nothing either way.
func TestUnreachable(t *testing.T) {
	c := &clock{now: t0}
	m, err := New(DefaultConfig(), c.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	m.Track(map[string][]string{"openai": {"gpt"}, "gemini": {"flash"}})
	dns := "DNS: api.openai.com resolved to no address"
	steps := []struct {
		name          string
		do            func()
		wantSince     time.Time // zero: reachable
		wantWhy       string
		wantNoAddress bool // the router tries the provider after the others
	}{
		{name: "nothing seen yet", do: func() {}},
		{name: "a DNS failure", do: func() {
			m.Observe(Observation{Provider: "openai", Model: "gpt", Quota: -1, Failure: NoAddress, Detail: dns})
		}, wantSince: t0, wantWhy: dns, wantNoAddress: true},
		{name: "a refused check a minute later keeps the start, takes the reason", do: func() {
			c.Add(time.Minute)
			m.Check(CheckResult{Provider: "openai", Failure: ConnectFailure, Error: "connect: 203.0.113.7:443: connection refused"})
		}, wantSince: t0, wantWhy: "connect: 203.0.113.7:443: connection refused"},
		{name: "a timeout says nothing of reachability", do: func() {
			m.Observe(Observation{Provider: "openai", Model: "gpt", Quota: -1, Failure: Timeout})
		}, wantSince: t0, wantWhy: "connect: 203.0.113.7:443: connection refused"},
		{name: "a 503 is an answer: reached", do: func() {
			m.Observe(Observation{Provider: "openai", Model: "gpt", Quota: -1, Status: 503})
		}},
	}
	for _, st := range steps {
		// Not subtests: each step builds on the ones before.
		st.do()
		got := m.Unreachable()
		snap := map[string]*Unreachable{}
		for _, p := range m.Snapshot() {
			snap[p.Provider] = p.Unreachable
		}
		if snap["gemini"] != nil {
			t.Errorf("%s: gemini unreachable: %+v", st.name, snap["gemini"])
		}
		if st.wantSince.IsZero() {
			if len(got) != 0 || snap["openai"] != nil {
				t.Errorf("%s: unreachable %+v, snapshot %+v; want reachable", st.name, got, snap["openai"])
			}
			continue
		}
		if a := m.Admit("openai", "gpt", 1); (a.NoAddress != "") != st.wantNoAddress {
			t.Errorf("%s: admission %+v, want no address %v", st.name, a, st.wantNoAddress)
		}
		want := Unreachable{Since: st.wantSince, Reason: st.wantWhy, NoAddress: st.wantNoAddress}
		if len(got) != 1 || got[0].Provider != "openai" || got[0].Unreachable != want || snap["openai"] == nil || *snap["openai"] != want {
			t.Errorf("%s: unreachable %+v, snapshot %+v; want openai %+v", st.name, got, snap["openai"], want)
		}
	}
}
