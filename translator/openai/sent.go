package openai

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/translator/readback"
)

// Sent implements [translator.Reporter]. The text is taken from the
// choices as they are written for the client, so it is what
// readback.Chunk would read back from the event, without a second
// reading of it.
func (tr *Translator) Sent(text []byte) (_ []byte, errorType string) {
	return append(text, tr.sentText...), tr.sentError
}

// emitError writes the error event that ends the stream.
func (tr *Translator) emitError(out []byte, e *openaiapi.Error) []byte {
	tr.failed = true
	tr.sentError = e.Type
	if tr.sentError == "" {
		tr.sentError = readback.StreamError
	}
	return append(out, e.StreamEvent()...)
}

// noteToolCalls takes in what a chunk's tool calls, arr as the client gets
// it, send: their function names and arguments. Member names are matched
// as readback matches them, exactly. A delta's content and refusal are
// taken in as appendMessage writes them.
func (tr *Translator) noteToolCalls(arr []byte) {
	forInner(arr, "function", func(k, v []byte) {
		if named(k, "name") || named(k, "arguments") {
			tr.noteString(v)
		}
	})
}

// forInner calls f with each member of the objects that the objects of
// the array arr hold under the name outer.
func forInner(arr []byte, outer string, f func(key, val []byte)) {
	els, ok := arrayElements(arr)
	if !ok {
		return
	}
	for el, more := els.next(); more; el, more = els.next() {
		forMembers(el, func(k, inner []byte) {
			if named(k, outer) {
				forMembers(inner, f)
			}
		})
	}
}

// noteString takes in a JSON string's text, decoded as encoding/json
// decodes it; anything else is not text.
func (tr *Translator) noteString(v []byte) {
	if len(v) < 2 || v[0] != '"' {
		return
	}
	inner := v[1 : len(v)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		tr.sentText = append(tr.sentText, inner...)
		return
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		tr.sentText = append(tr.sentText, s...)
	}
}

// forMembers calls f with each member of the object obj, if it is one.
func forMembers(obj []byte, f func(key, val []byte)) {
	m, ok := objectMembers(obj)
	if !ok {
		return
	}
	for k, v, ok := m.next(); ok; k, v, ok = m.next() {
		f(k, v)
	}
}

// named reports whether the raw member name k, unescaped, is name.
func named(k []byte, name string) bool {
	if bytes.IndexByte(k, '\\') < 0 {
		return string(k) == name
	}
	var s string
	return json.Unmarshal(append(append([]byte{'"'}, k...), '"'), &s) == nil && s == name
}
