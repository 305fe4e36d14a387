// Package sse reads and writes Server-Sent Events incrementally.
//
// Envoy hands a streamed body over in chunks whose boundaries never line up
// with events, so the [Reader] keeps the bytes of an unfinished event
// between calls. It follows the WHATWG event-stream rules that matter for
// LLM APIs: LF, CR or CRLF line ends, "event:" and multi-line "data:"
// fields, and comment lines (":") which it skips.
package sse
