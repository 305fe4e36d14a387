package providersim

import (
	"maps"
	"net/http"
	"slices"
)

// Stats is what a simulated provider has seen since it started or was last
// reset.
type Stats struct {
	// Requests counts every request that reached the provider's listener.
	Requests int `json:"requests"`
	// ByPath counts requests per URL path.
	ByPath map[string]int `json:"by_path"`
	// ByStatus counts responses per HTTP status; a cut stream counts as the
	// 200 it started with.
	ByStatus map[int]int `json:"by_status"`
	// PromptTokens and CompletionTokens add up the usage of every reply
	// served, a cut stream's whole reply included (embeddings count as
	// prompt tokens).
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	// Recent holds the last Config.History requests, oldest first.
	Recent []RecordedRequest `json:"recent"`
}

// RecordedRequest is one request as the provider received it. Headers are
// kept verbatim, keys included, because tests check which credentials a
// gateway forwarded; the simulator only ever sees test keys.
type RecordedRequest struct {
	Method string      `json:"method"`
	Path   string      `json:"path"`
	Query  string      `json:"query"`
	Header http.Header `json:"header"`
	Body   string      `json:"body"`
	// SNI is the TLS server name the client sent; empty over plain HTTP.
	SNI string `json:"sni,omitempty"`
	// Proto is the HTTP version the request came in: HTTP/1.1, or
	// HTTP/2.0 (over plain HTTP only by prior knowledge, h2c).
	Proto string `json:"proto"`
}

// statsRecorder accumulates Stats; its owner serialises access.
type statsRecorder struct {
	history int
	s       Stats
}

func newStatsRecorder(history int) statsRecorder {
	return statsRecorder{history: history, s: emptyStats()}
}

func emptyStats() Stats {
	return Stats{ByPath: map[string]int{}, ByStatus: map[int]int{}, Recent: []RecordedRequest{}}
}

func (r *statsRecorder) request(req *http.Request, body []byte) {
	r.s.Requests++
	r.s.ByPath[req.URL.Path]++
	if r.history <= 0 {
		return
	}
	if len(r.s.Recent) == r.history {
		r.s.Recent = slices.Delete(r.s.Recent, 0, 1)
	}
	r.s.Recent = append(r.s.Recent, RecordedRequest{
		Method: req.Method,
		Path:   req.URL.Path,
		Query:  req.URL.RawQuery,
		Header: req.Header.Clone(),
		Body:   string(body),
		SNI:    serverName(req),
		Proto:  req.Proto,
	})
}

func serverName(req *http.Request) string {
	if req.TLS == nil {
		return ""
	}
	return req.TLS.ServerName
}

func (r *statsRecorder) status(code int) { r.s.ByStatus[code]++ }

func (r *statsRecorder) tokens(prompt, completion int) {
	r.s.PromptTokens += prompt
	r.s.CompletionTokens += completion
}

func (r *statsRecorder) reset() { r.s = emptyStats() }

// snapshot returns a deep copy so callers can keep it while requests go on.
func (r *statsRecorder) snapshot() Stats {
	out := r.s
	out.ByPath = maps.Clone(r.s.ByPath)
	out.ByStatus = maps.Clone(r.s.ByStatus)
	out.Recent = make([]RecordedRequest, len(r.s.Recent))
	for i, rec := range r.s.Recent {
		rec.Header = rec.Header.Clone()
		out.Recent[i] = rec
	}
	return out
}
