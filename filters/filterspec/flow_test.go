package filterspec

import (
	"slices"
	"strings"
	"testing"
)

// orders are the shipped filters' positions the cases use.
var orders = map[string]int{"auth": 100, "router": 200, "quota": 300, "usage": 350, "translate": 400}

// fake declares a filter of a shipped name with only uses.
func fake(name string, uses []Use) *Decl { return &Decl{Name: name, Order: orders[name], Uses: uses} }

func TestCheckFlow(t *testing.T) {
	auth := fake("auth", []Use{Provides(PhaseRequestHeaders, FieldCaller)})
	router := fake("router", []Use{Needs(PhaseRequestBody, FieldCaller), Reads(PhaseRequestBody, FieldPressure), Provides(PhaseRequestBody, FieldPlan)})
	quota := fake("quota", []Use{Provides(PhaseRequestHeaders, FieldPressure), Reads(PhaseRequestBody, FieldPlan), Provides(PhaseRequestBody, FieldPlan), Reads(PhaseDone, FieldUsage)})
	translate := fake("translate", []Use{Provides(PhaseResponseBody, FieldSent), Provides(PhaseDone, FieldUsage)})
	usage := fake("usage", []Use{Needs(PhaseDone, FieldUsage), Needs(PhaseDone, FieldSent)})
	tests := []struct {
		name    string
		filters []*Decl
		wantErr string // "" for a flow that holds
	}{
		{name: "the shipped order", filters: []*Decl{auth, router, quota, translate, usage}},
		{name: "an optional field nobody provides", filters: []*Decl{auth, router}},
		{name: "quota's plan comes from the router, before it in body hooks",
			filters: []*Decl{quota, router, auth}},
		{name: "a need nobody provides",
			filters: []*Decl{router},
			wantErr: `filter "router" needs Caller at request body`},
		{name: "done runs descending: usage after translate",
			filters: []*Decl{auth, router, translate, usage}},
		{name: "a provider later than its reader",
			filters: []*Decl{auth, router, fake("translate", []Use{Provides(PhaseDone, FieldPressure)})},
			wantErr: `filter "router" needs Pressure at request body`},
		{name: "the provider of a needed field runs after the reader within a phase",
			filters: []*Decl{fake("auth", []Use{Needs(PhaseRequestBody, FieldPlan)}), fake("router", []Use{Provides(PhaseRequestBody, FieldPlan)})},
			wantErr: `filter "auth" needs Plan at request body`},
		{name: "a filter that rewrites a field when there, alone (quota on a rating route)",
			filters: []*Decl{auth, quota}},
		{name: "a filter that rewrites a field when there, before another provider",
			filters: []*Decl{fake("auth", []Use{Reads(PhaseRequestBody, FieldPlan), Provides(PhaseRequestBody, FieldPlan)}), fake("router", []Use{Provides(PhaseRequestBody, FieldPlan)})},
			wantErr: `filter "auth" needs Plan at request body`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckFlow(tt.filters)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("got %v, want the flow to hold", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("got %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestMissing(t *testing.T) {
	auth := fake("auth", []Use{Provides(PhaseRequestHeaders, FieldCaller)})
	router := fake("router", []Use{Needs(PhaseRequestBody, FieldCaller), Provides(PhaseRequestBody, FieldPlan), Needs(PhaseResponseBody, FieldPlan)})
	quota := fake("quota", []Use{Needs(PhaseRequestHeaders, FieldCaller), Reads(PhaseRequestBody, FieldPlan), Provides(PhaseRequestBody, FieldPlan)})
	translate := &Decl{Name: "translate", Order: 400, Uses: []Use{Needs(PhaseAttempt, FieldPlan), Provides(PhaseDone, FieldUsage)},
		Requires: []Requirement{{Filter: "usage", Why: "a ledger row"}}}
	usage := fake("usage", []Use{Needs(PhaseDone, FieldCaller), Needs(PhaseDone, FieldUsage)})
	all := []*Decl{auth, router, quota, usage, translate}
	tests := []struct {
		name   string
		filter *Decl
		listed []string
		want   []string
	}{
		{name: "a need met", filter: router, listed: []string{"auth", "router"}},
		{name: "a need unmet names its origin", filter: quota, listed: []string{"quota"}, want: []string{"auth"}},
		{name: "a field the filter itself provides earlier", filter: router, listed: []string{"auth"}},
		{name: "a rewriter is no origin", filter: translate, listed: []string{"auth", "quota", "usage"}, want: []string{"router"}},
		{name: "an explicit requirement", filter: translate, listed: []string{"router"}, want: []string{"usage"}},
		{name: "each missing filter once", filter: usage, listed: nil, want: []string{"auth", "translate"}},
		{name: "a filter that needs nothing", filter: auth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			listed := map[string]bool{}
			for _, n := range tt.listed {
				listed[n] = true
			}
			if got := Missing(tt.filter, listed, all); !slices.Equal(got, tt.want) {
				t.Errorf("Missing = %q, want %q", got, tt.want)
			}
		})
	}
}
