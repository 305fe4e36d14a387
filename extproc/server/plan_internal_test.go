package server

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/envoy/contract"
	"github.com/switchyard/switchyard/filters"
)

// TestPlanMetadata: the route metadata of a plan, made once and kept, is
// what each plan's requests need: its providers in order (a hedge's pair
// cluster twice), the cluster translated for and the client's API; and a
// request's outer struct is its own.
func TestPlanMetadata(t *testing.T) {
	target := func(provider string) filters.Target {
		return filters.Target{Model: &policy.Model{Name: "m-" + provider, Provider: &policy.Provider{Name: provider, Cluster: "c-" + provider}}}
	}
	chat := &policy.Route{API: policy.APIChatCompletions}
	messages := &policy.Route{API: policy.APIMessages}
	want := func(translatedFor string, anthropic bool, groups ...string) *structpb.Struct {
		gs := make([]any, len(groups))
		for i, g := range groups {
			gs[i] = map[string]any{"name": g}
		}
		route := map[string]any{contract.PriorityGroupsKey: gs, contract.TranslatedForKey: translatedFor}
		if anthropic {
			route[contract.ClientAPIKey] = contract.ClientAnthropic
		}
		s, err := structpb.NewStruct(map[string]any{contract.RouteMetadataNamespace: route})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	var plans planCache
	for _, tc := range []struct {
		name string
		x    *filters.Exchange
		want *structpb.Struct
	}{
		{"one provider", &filters.Exchange{Route: chat, Plan: []filters.Target{target("a")}}, want("c-a", false, "a")},
		{"a fallback", &filters.Exchange{Route: chat, Plan: []filters.Target{target("a"), target("b")}}, want("c-a", false, "a", "b")},
		{"the other order", &filters.Exchange{Route: chat, Plan: []filters.Target{target("b"), target("a")}}, want("c-b", false, "b", "a")},
		{"an Anthropic client", &filters.Exchange{Route: messages, Plan: []filters.Target{target("a"), target("b")}}, want("c-a", true, "a", "b")},
		{"hedged", &filters.Exchange{Route: chat, Hedge: &filters.Hedge{After: time.Second}, Plan: []filters.Target{target("a"), target("b")}},
			want(contract.HedgeCluster("a", "b"), false, contract.HedgeCluster("a", "b"), contract.HedgeCluster("a", "b"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 2 { // made, then kept
				got := planMetadata(&plans, tc.x, tc.x.Plan[0].Provider().Cluster)
				if d := cmp.Diff(tc.want, got, protocmp.Transform()); d != "" {
					t.Errorf("metadata (-want +got):\n%s", d)
				}
				got.Fields["another"] = structpb.NewNullValue() // a request's own
			}
		})
	}
	if n := plans.n.Load(); n != 5 {
		t.Errorf("%d plans made, want 5", n)
	}
}

// TestPlanCacheBounded: past maxPlans the cache starts again.
func TestPlanCacheBounded(t *testing.T) {
	var plans planCache
	for i := range maxPlans + 10 {
		plans.get([]string{"p", string(rune('a' + i%26)), string(rune(i))}, "c", false)
	}
	n := 0
	plans.m.Range(func(_, _ any) bool { n++; return true })
	if n > maxPlans || n == 0 {
		t.Errorf("%d plans kept, want 1 to %d", n, maxPlans)
	}
}

// TestDropUnchanged: a header set to the value the request has, once, is
// not sent; one a reply touched before, one removed in the same reply, one
// the request has twice or with another value, is.
func TestDropUnchanged(t *testing.T) {
	hdrs := filters.Headers{{Key: ":path", Value: "/v1/x"}, {Key: "content-type", Value: "application/json"},
		{Key: "authorization", Value: "Bearer k"}, {Key: "x-twice", Value: "a"}, {Key: "x-twice", Value: "a"},
		{Key: "anthropic-version", Value: "1"}, {Key: "accept", Value: "*/*"}}
	set := []filters.Header{{Key: ":path", Value: "/v1/x"}, {Key: "content-type", Value: "application/json"},
		{Key: "authorization", Value: "Bearer k"}, {Key: "x-twice", Value: "a"}, {Key: "anthropic-version", Value: "1"},
		{Key: "accept", Value: "application/json"}, {Key: "x-new", Value: "v"}}
	got := dropUnchanged(set, hdrs, []string{"authorization"}, []string{"anthropic-version"})
	want := []filters.Header{{Key: "authorization", Value: "Bearer k"}, {Key: "x-twice", Value: "a"}, {Key: "anthropic-version", Value: "1"},
		{Key: "accept", Value: "application/json"}, {Key: "x-new", Value: "v"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("sets sent (-want +got):\n%s", d)
	}
}
