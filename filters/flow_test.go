package filters

import (
	"strings"
	"testing"
)

// fake is a filter that only declares.
type fake struct {
	name string
	uses []Use
}

func (f fake) Name() string { return f.name }
func (f fake) Uses() []Use  { return f.uses }

type silent struct{}

func (silent) Name() string { return "auth" }

func TestCheckFlow(t *testing.T) {
	auth := fake{"auth", []Use{Provides(PhaseRequestHeaders, FieldCaller)}}
	router := fake{"router", []Use{Needs(PhaseRequestBody, FieldCaller), Reads(PhaseRequestBody, FieldPressure), Provides(PhaseRequestBody, FieldPlan)}}
	quota := fake{"quota", []Use{Provides(PhaseRequestHeaders, FieldPressure), Reads(PhaseRequestBody, FieldPlan), Provides(PhaseRequestBody, FieldPlan), Reads(PhaseDone, FieldUsage)}}
	translate := fake{"translate", []Use{Provides(PhaseResponseBody, FieldSent), Provides(PhaseDone, FieldUsage)}}
	usage := fake{"usage", []Use{Needs(PhaseDone, FieldUsage), Needs(PhaseDone, FieldSent)}}
	tests := []struct {
		name    string
		filters []Filter
		wantErr string // "" for a flow that holds
	}{
		{name: "the shipped order", filters: []Filter{auth, router, quota, translate, usage}},
		{name: "an optional field nobody provides", filters: []Filter{auth, router}},
		{name: "quota's plan comes from the router, before it in body hooks",
			filters: []Filter{quota, router, auth}},
		{name: "a need nobody provides",
			filters: []Filter{router},
			wantErr: `filter "router" needs Caller at request body`},
		{name: "done runs descending: usage after translate",
			filters: []Filter{auth, router, translate, usage}},
		{name: "a provider later than its reader",
			filters: []Filter{auth, router, fake{"translate", []Use{Provides(PhaseDone, FieldPressure)}}},
			wantErr: `filter "router" needs Pressure at request body`},
		{name: "the provider of a needed field runs after the reader within a phase",
			filters: []Filter{fake{"auth", []Use{Needs(PhaseRequestBody, FieldPlan)}}, fake{"router", []Use{Provides(PhaseRequestBody, FieldPlan)}}},
			wantErr: `filter "auth" needs Plan at request body`},
		{name: "a filter that rewrites a field when there, alone (quota on a rating route)",
			filters: []Filter{auth, quota}},
		{name: "a filter that rewrites a field when there, before another provider",
			filters: []Filter{fake{"auth", []Use{Reads(PhaseRequestBody, FieldPlan), Provides(PhaseRequestBody, FieldPlan)}}, fake{"router", []Use{Provides(PhaseRequestBody, FieldPlan)}}},
			wantErr: `filter "auth" needs Plan at request body`},
		{name: "a filter without declarations", filters: []Filter{silent{}}, wantErr: `filter "auth" declares no Uses`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkFlow(NewChain(tt.filters).filters)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("got %v, want the flow to hold", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("got %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}
