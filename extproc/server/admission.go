package server

import (
	"net/http"
	"sync/atomic"

	"github.com/switchyard/switchyard/apischema/openaiapi"
)

// Admission bounds what ext_proc holds at once, so that an overload is
// refused at the door (503 with retry-after, in microseconds) instead of
// queueing until memory runs out. Together they bound ext_proc's memory:
// the bodies in flight are held in about four copies (the gRPC message,
// the exchange, the parsed request, an attempt's translation) while a
// request is translated, one fewer once it is sent, and only the parsed
// one once its answer streams ([filters.Exchange.ReleaseRequest]; the
// bound still counts the body until the request ends), and each
// exchange costs some tens of KB besides; see docs/RELIABILITY.md.
type Admission struct {
	// MaxInFlight is the most requests in flight; 0 means no bound.
	MaxInFlight int64
	// MaxInFlightBytes is the most request-body bytes in flight; 0 means
	// no bound. A single body larger than this is still served when
	// nothing else is in flight (the policy's max_request_bytes bounds it).
	MaxInFlightBytes int64
}

// admission is the server's count of what it holds.
type admission struct {
	limits Admission
	n      atomic.Int64
	bytes  atomic.Int64
	// started counts the requests admitted since the server began.
	started atomic.Int64
}

// retryAfterSeconds is what an overloaded gateway asks clients to wait.
const retryAfterSeconds = "1"

func overloaded(what string) *openaiapi.Error {
	return openaiapi.Errorf(http.StatusServiceUnavailable, openaiapi.TypeServiceUnavailable, "gateway_overloaded",
		"the gateway is at capacity (%s); retry after a moment", what).WithHeader("retry-after", retryAfterSeconds)
}

// enter admits one more request, or says why not.
func (a *admission) enter() *openaiapi.Error {
	if n := a.n.Add(1); a.limits.MaxInFlight > 0 && n > a.limits.MaxInFlight {
		a.n.Add(-1)
		return overloaded("requests in flight")
	}
	a.started.Add(1)
	return nil
}

// leave lets a request go with the body bytes it held.
func (a *admission) leave(bodyBytes int64) {
	a.n.Add(-1)
	if bodyBytes > 0 {
		a.bytes.Add(-bodyBytes)
	}
}

// hold takes n body bytes; false when they do not fit.
func (a *admission) hold(n int64) bool {
	total := a.bytes.Add(n)
	if a.limits.MaxInFlightBytes > 0 && total > a.limits.MaxInFlightBytes && total != n {
		a.bytes.Add(-n)
		return false
	}
	return true
}
