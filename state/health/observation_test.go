package health

import "testing"

func TestObservationFailed(t *testing.T) {
	tests := []struct {
		name string
		o    Observation
		want bool
	}{
		{name: "200", o: Observation{Status: 200}, want: false},
		{name: "400 is the client's", o: Observation{Status: 400}, want: false},
		{name: "401 is the client's", o: Observation{Status: 401}, want: false},
		{name: "404 is the client's", o: Observation{Status: 404}, want: false},
		{name: "429 rate limit", o: Observation{Status: 429}, want: true},
		{name: "500", o: Observation{Status: 500}, want: true},
		{name: "503", o: Observation{Status: 503}, want: true},
		{name: "529 overloaded", o: Observation{Status: 529}, want: true},
		{name: "no status", o: Observation{}, want: true},
		{name: "connect failure", o: Observation{Failure: ConnectFailure}, want: true},
		{name: "reset", o: Observation{Failure: Reset}, want: true},
		{name: "timeout", o: Observation{Failure: Timeout}, want: true},
		{name: "timeout after a status", o: Observation{Status: 200, Failure: Timeout}, want: true},
		{name: "canceled by the client", o: Observation{Failure: Canceled}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.o.Failed(); got != tt.want {
				t.Errorf("Failed() = %v, want %v", got, tt.want)
			}
		})
	}
}
