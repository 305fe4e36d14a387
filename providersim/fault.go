package providersim

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// FaultMode names one kind of injected failure.
type FaultMode string

// The fault modes a simulated provider understands.
const (
	// FaultDown closes the provider's listener so connections are refused; it
	// lasts until the fault is cleared, when the listener reopens on the same
	// address.
	FaultDown FaultMode = "down"
	// FaultDown503 keeps the listener open and answers every request with a
	// bare 503, the way a load balancer in front of a dead backend does.
	FaultDown503 FaultMode = "down_503"
	// FaultStatus answers with Fault.Status, using Fault.Body or, when that is
	// empty, the provider's native error body for the status.
	FaultStatus FaultMode = "status"
	// FaultLatency waits Fault.Delay before the response headers.
	FaultLatency FaultMode = "latency"
	// FaultSlowStream waits Fault.Delay between stream events. It only
	// applies to (and is only consumed by) streaming requests.
	FaultSlowStream FaultMode = "slow_stream"
	// FaultDrip sends a non-streamed answer's body one byte every
	// Fault.Delay, the way a stuck proxy or an overloaded provider does:
	// each byte resets an idle timeout. It only applies to (and is only
	// consumed by) non-streaming requests.
	FaultDrip FaultMode = "drip"
	// FaultDripStream sends a stream's events Fault.Delay apart, never the
	// final one, then keeps the stream open forever with a keep-alive (an
	// SSE comment, whitespace in a JSON stream) every Fault.Delay: a
	// provider stuck mid-answer whose bytes reset every idle timeout. It
	// only applies to streaming requests.
	FaultDripStream FaultMode = "drip_stream"
	// FaultCutStream sends Fault.Chunks stream events, never the final one,
	// then drops the connection. It only applies to streaming requests.
	FaultCutStream FaultMode = "cut_stream"
	// FaultMalformed answers 200 with a body that is not valid JSON (or not
	// valid JSON inside the SSE events of a stream); Fault.Body overrides it.
	FaultMalformed FaultMode = "malformed"
)

// Fault describes an injected failure. Set it with [Sim.SetFault] or
// POST /control/{provider}/fault; its JSON form uses the tags below, with
// durations written as Go duration strings such as "250ms".
type Fault struct {
	// Mode is the kind of failure. It may be empty when the fault only sets
	// QuotaRemaining.
	Mode FaultMode `json:"mode,omitempty"`
	// Status is the HTTP status for FaultStatus.
	Status int `json:"status,omitempty"`
	// Body replaces the generated body for FaultStatus and FaultMalformed.
	Body string `json:"body,omitempty"`
	// Headers are added to the response for FaultStatus.
	Headers map[string]string `json:"headers,omitempty"`
	// Delay is the wait for FaultLatency, FaultSlowStream, FaultDrip and
	// FaultDripStream.
	Delay Duration `json:"delay,omitempty"`
	// RetryAfter is the back-off advertised by native 429/503/529 bodies and
	// retry-after headers; it defaults to one second.
	RetryAfter Duration `json:"retry_after,omitempty"`
	// Chunks is how many stream events FaultCutStream sends before cutting.
	Chunks int `json:"chunks,omitempty"`
	// Count is how many requests the fault applies to before it clears
	// itself; 0 keeps it until it is cleared. FaultDown refuses connections,
	// which cannot be counted, so it needs Count 0.
	Count int `json:"count,omitempty"`
	// QuotaRemaining, when set, is reported as the remaining requests and
	// tokens in the provider's rate-limit response headers while the fault
	// is active. Gemini sends no such headers, so it has no effect there.
	QuotaRemaining *int64 `json:"quota_remaining,omitempty"`
}

const defaultRetryAfter = time.Second

// Plenty is a QuotaRemaining that no run spends: the simulators' default
// quota (10,000 requests a minute, as a real account's) runs out in
// seconds under a flood or a benchmark, and a gateway then rightly routes
// around the provider that says so.
func Plenty() *int64 {
	n := int64(1 << 40)
	return &n
}

func (f Fault) validate() error {
	if f.Count < 0 {
		return fmt.Errorf("count %d: must not be negative", f.Count)
	}
	if f.Delay < 0 || f.RetryAfter < 0 {
		return errors.New("delay and retry_after must not be negative")
	}
	switch f.Mode {
	case "":
		if f.QuotaRemaining == nil {
			return errors.New("mode: required unless quota_remaining is set")
		}
	case FaultDown:
		if f.Count != 0 {
			return errors.New("count: a down provider refuses connections, which cannot be counted; clear the fault instead")
		}
	case FaultDown503, FaultMalformed:
	case FaultStatus:
		if f.Status < 100 || f.Status > 599 {
			return fmt.Errorf("status %d: must be an HTTP status between 100 and 599", f.Status)
		}
	case FaultLatency, FaultSlowStream, FaultDrip, FaultDripStream:
		if f.Delay <= 0 {
			return fmt.Errorf("delay: required for mode %q", f.Mode)
		}
	case FaultCutStream:
		if f.Chunks < 0 {
			return fmt.Errorf("chunks %d: must not be negative", f.Chunks)
		}
	default:
		return fmt.Errorf("mode %q: unknown", f.Mode)
	}
	return nil
}

func (f Fault) streamOnly() bool {
	return f.Mode == FaultSlowStream || f.Mode == FaultCutStream || f.Mode == FaultDripStream
}

func (f Fault) retryAfter() time.Duration {
	if f.RetryAfter > 0 {
		return time.Duration(f.RetryAfter)
	}
	return defaultRetryAfter
}

// Duration is a time.Duration that reads and writes JSON as a Go duration
// string ("1.5s"), which is what people type into curl.
type Duration time.Duration

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"250ms\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}
