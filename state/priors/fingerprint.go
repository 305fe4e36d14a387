package priors

import "github.com/cespare/xxhash/v2"

// FingerprintBytes is how much of a system prompt its fingerprint reads:
// an app's instructions come first, and what varies per request (the
// user's files, the date, a session's state) tends to come after them.
const FingerprintBytes = 1024

// Print fingerprints a system prompt fed to it in pieces, as it is held
// (a string, or a message's text parts): xxhash of its first
// FingerprintBytes bytes with ASCII digits left out, so that a version,
// a date or a count in the instructions does not split an app's traffic
// into domains. The zero value is ready; it does not allocate.
type Print struct {
	buf  [FingerprintBytes]byte
	n    int // bytes of the prompt read
	kept int // of which in buf
	used bool
}

// Add feeds the next piece of the prompt.
func (p *Print) Add(s string) {
	if s == "" {
		return
	}
	p.used = true
	s = s[:min(len(s), FingerprintBytes-p.n)]
	p.n += len(s)
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < '0' || c > '9' {
			p.buf[p.kept] = c
			p.kept++
		}
	}
}

// Sum is the fingerprint: 0 when nothing was fed (no system prompt, the
// app's fallback domain), never 0 otherwise.
func (p *Print) Sum() uint64 {
	if !p.used {
		return 0
	}
	if h := xxhash.Sum64(p.buf[:p.kept]); h != 0 {
		return h
	}
	return 1
}
