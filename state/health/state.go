package health

// State is the health of a provider or a model.
type State int

const (
	// Healthy is routed with full weight.
	Healthy State = iota
	// Degraded is routed with Config.DegradedWeight.
	Degraded
	// Unavailable is not routed.
	Unavailable
)

var stateNames = [...]string{"healthy", "degraded", "unavailable"}

// String implements fmt.Stringer.
func (s State) String() string { return stateNames[s] }

// MarshalText implements encoding.TextMarshaler.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// BreakerState is the state of a provider's circuit breaker.
type BreakerState int

const (
	// BreakerClosed lets every request through and counts failures.
	BreakerClosed BreakerState = iota
	// BreakerOpen refuses every request until Config.Breaker.OpenTimeout
	// has passed.
	BreakerOpen
	// BreakerHalfOpen lets Config.Breaker.HalfOpenProbes requests through
	// to decide between closing and opening again.
	BreakerHalfOpen
)

var breakerNames = [...]string{"closed", "open", "half_open"}

// String implements fmt.Stringer.
func (s BreakerState) String() string { return breakerNames[s] }

// MarshalText implements encoding.TextMarshaler.
func (s BreakerState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }
