package openai

import (
	"net/http"
	"strconv"

	"github.com/switchyard/switchyard/apischema/jsonform"
	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/translator"
)

// Complete implements [translator.Translator.Complete].
func (tr *Translator) Complete(status int, h translator.Headers, body []byte) translator.Result {
	if status < 200 || status > 299 {
		return translator.ErrorResult(tr.upstreamError(status, h, body))
	}
	hd, ok := scanHead(body)
	switch {
	case !ok && !validJSON(body):
		return translator.ErrorResult(translator.GarbageError(tr.t.Provider.Name, "the body is not JSON"))
	case !ok:
		return translator.ErrorResult(translator.GarbageError(tr.t.Provider.Name, "the body is not a JSON object"))
	case hd.err != nil && string(hd.err) != "null":
		// Some servers answer 200 with an error body.
		msg := parseError(body).message
		return translator.ErrorResult(translator.GarbageError(tr.t.Provider.Name, "a success carried an error: "+translator.Scrub(msg)))
	case len(hd.choices) == 0 || hd.choices[0] != '[':
		return translator.ErrorResult(translator.GarbageError(tr.t.Provider.Name, "the body is not a chat completion"))
	}
	tr.capture(&hd)
	out := tr.appendObject(make([]byte, 0, len(body)+len(tr.clientModel)), &hd, body, false, usageKeep)
	return translator.Result{Status: http.StatusOK, Body: out}
}

// head is what the gateway reads from a completion, chunk or embedding
// list before it rewrites it.
type head struct {
	id, created, choices, usage, err, xgroq, data []byte
	// members are where the object's members lie, as scanHead read them,
	// n of them, so that the rewrite need not find them again; more than
	// fit leave n at -1, and the rewrite reads the object itself. Offsets,
	// not slices: a head is made for every streamed event, and offsets
	// cost it no pointers to clear and copy.
	members [headMembers]member
	n       int
}

// member is where a key, as written, and its raw value lie in the object.
type member struct{ k0, k1, v0, v1 int32 }

// at is the member's key and value in b, the object it was read from.
func (m member) at(b []byte) (key, val []byte) { return b[m.k0:m.k1], b[m.v0:m.v1] }

// offset is where sub, a slice of b, begins in b.
func offset(b, sub []byte) int32 { return int32(cap(b) - cap(sub)) }

// headMembers is how many members scanHead keeps: a chunk has about
// eight.
const headMembers = 16

// scanHead reads the top-level members of an untrusted JSON document,
// checking it as it reads; ok is false unless it is one valid object.
func scanHead(b []byte) (hd head, ok bool) {
	m, ok := validObjectMembers(b)
	if !ok {
		return head{}, false
	}
	var kb keyBuf
	for k, v, ok := m.next(); ok; k, v, ok = m.next() {
		if hd.n >= 0 && hd.n < headMembers {
			k0, v0 := offset(b, k), offset(b, v)
			hd.members[hd.n] = member{k0, k0 + int32(len(k)), v0, v0 + int32(len(v))}
			hd.n++
		} else {
			hd.n = -1
		}
		switch string(kb.canon(k)) {
		case "id":
			hd.id = v
		case "created":
			hd.created = v
		case "choices":
			hd.choices = v
		case "usage":
			hd.usage = v
		case "error":
			hd.err = v
		case "x_groq":
			hd.xgroq = v
		case "data":
			hd.data = v
		}
	}
	return hd, !m.bad
}

// capture records the usage a completion or chunk reports and returns its
// raw form, nil if none. Groq's x_groq.usage counts when the standard field
// is absent; a later report replaces an earlier one (reports are totals).
func (tr *Translator) capture(hd *head) []byte {
	raw := hd.usage
	if len(raw) == 0 || raw[0] != '{' {
		raw = nil
		if m, ok := objectMembers(hd.xgroq); ok {
			var kb keyBuf
			for k, v, ok := m.next(); ok; k, v, ok = m.next() {
				if string(kb.canon(k)) == "usage" && len(v) > 0 && v[0] == '{' {
					raw = v
				}
			}
		}
	}
	if raw == nil {
		return nil
	}
	u, ok := readUsage(raw)
	if !ok {
		return nil
	}
	if u.PromptCacheHitTokens != nil && u.Usage.Cached() == 0 {
		if u.PromptTokensDetails == nil {
			u.PromptTokensDetails = &openaiapi.PromptTokensDetails{}
		}
		u.PromptTokensDetails.CachedTokens = *u.PromptCacheHitTokens
	}
	tr.usage, tr.hasUsage = u.Usage, true
	return raw
}

// usageMode says what becomes of an object's usage member.
type usageMode uint8

const (
	usageKeep usageMode = iota
	usageNull
	usageDrop
)

var (
	objectCompletion = []byte(`"chat.completion"`)
	objectChunk      = []byte(`"chat.completion.chunk"`)
)

// appendObject writes the client's form of a chat completion (chunk false)
// or chunk obj, whose head scanHead read: the model is the client's, and
// for strict providers only OpenAI's fields remain.
func (tr *Translator) appendObject(out []byte, hd *head, obj []byte, chunk bool, um usageMode) []byte {
	var kb keyBuf
	if hd.n < 0 {
		return appendMembers(out, obj, func(w writer, k, v []byte) writer {
			return tr.objectMember(w, &kb, k, v, chunk, um)
		})
	}
	w := writer{out: out}
	w.open()
	for _, m := range hd.members[:hd.n] {
		k, v := m.at(obj)
		w = tr.objectMember(w, &kb, k, v, chunk, um)
	}
	w.close()
	return w.out
}

// objectMember writes one member of a completion or chunk as the client
// gets it.
func (tr *Translator) objectMember(w writer, kb *keyBuf, k, v []byte, chunk bool, um usageMode) writer {
	switch string(kb.canon(k)) {
	case "model":
		w.key("model")
		w.out = append(w.out, tr.clientModel...)
	case "object":
		w.key("object")
		if chunk {
			w.out = append(w.out, objectChunk...)
		} else {
			w.out = append(w.out, objectCompletion...)
		}
	case "id":
		// Azure's filter-only chunk has an empty id; so may others.
		w.key("id")
		if s, ok := stringValue(v); ok && len(s) > 0 {
			w.out = append(w.out, v...)
		} else {
			w.out = append(w.out, tr.id...)
		}
	case "created":
		w.key("created")
		if len(v) > 0 && v[0] >= '1' && v[0] <= '9' {
			w.out = append(w.out, v...)
		} else {
			w.out = strconv.AppendInt(w.out, tr.t.Created, 10)
		}
	case "choices":
		w.key("choices")
		w.out = tr.appendChoices(w.out, v, chunk)
	case "usage":
		switch um {
		case usageKeep:
			w.key("usage")
			w.out = tr.appendUsage(w.out, v)
		case usageNull:
			w.key("usage")
			w.out = append(w.out, "null"...)
		}
	case "system_fingerprint", "service_tier":
		w.member(k, v)
	case "prompt_filter_results", "prompt_annotations":
		// Azure's, also when its v1 API is configured as kind openai.
	default:
		tr.unknown(&w, k, v)
	}
	return w
}

// appendUsage writes a usage object as OpenAI spells it: for strict
// providers only OpenAI's counters, with DeepSeek's cache hits as
// prompt_tokens_details.cached_tokens.
func (tr *Translator) appendUsage(out, v []byte) []byte {
	if !tr.q.strictResponse {
		return append(out, v...)
	}
	m, ok := objectMembers(v)
	if !ok {
		return append(out, "null"...)
	}
	w := writer{out: out}
	w.open()
	var hits []byte
	details := false
	var kb keyBuf
	for k, v, ok := m.next(); ok; k, v, ok = m.next() {
		switch string(kb.canon(k)) {
		case "prompt_tokens", "completion_tokens", "total_tokens", "completion_tokens_details":
			w.member(k, v)
		case "prompt_tokens_details":
			if string(v) != "null" {
				w.member(k, v)
				details = true
			}
		case "prompt_cache_hit_tokens":
			hits = v
		}
	}
	if hits != nil && !details {
		w.key("prompt_tokens_details")
		w.out = append(w.out, `{"cached_tokens":`...)
		w.out = append(w.out, hits...)
		w.out = append(w.out, '}')
	}
	w.close()
	return w.out
}

func (tr *Translator) appendChoices(out, arr []byte, chunk bool) []byte {
	if _, ok := arrayElements(arr); !ok {
		return append(out, "[]"...)
	}
	return appendArray(out, arr, func(out, c []byte) []byte {
		return tr.appendChoice(out, c, chunk)
	})
}

func (tr *Translator) appendChoice(out, c []byte, chunk bool) []byte {
	// Providers write index before delta; a choice that does not is
	// counted as choice 0, which only matters for index-less tool calls.
	index := 0
	var kb keyBuf
	return appendMembers(out, c, func(w writer, k, v []byte) writer {
		switch string(kb.canon(k)) {
		case "index":
			w.member(k, v)
			index = smallInt(v)
		case "finish_reason":
			w.key("finish_reason")
			w.out = append(w.out, finishReason(v)...)
		case "delta", "message":
			w.rawKey(k)
			// What a chunk's delta sends is taken in as it is written, as
			// readback would read it back: under a name spelled exactly.
			w.out = tr.appendMessage(w.out, v, chunk, index, chunk && named(k, "delta"))
		case "logprobs":
			w.member(k, v)
		case "content_filter_results", "content_filter_offsets":
			// Azure's, as above.
		default:
			tr.unknown(&w, k, v)
		}
		return w
	})
}

// smallInt reads a choice index; anything but a small non-negative integer
// reads as 0.
func smallInt(v []byte) int {
	n := 0
	if len(v) == 0 || len(v) > 3 {
		return 0
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}

var (
	finishStop   = []byte(`"stop"`)
	finishLength = []byte(`"length"`)
)

// finishReason maps a provider's finish reason to one of the five values
// OpenAI clients know. Truncations map to length; anything else unknown
// (Mistral's error, vLLM's abort) to stop.
func finishReason(v []byte) []byte {
	switch string(v) {
	case "null", `"stop"`, `"length"`, `"tool_calls"`, `"content_filter"`, `"function_call"`:
		return v
	case `"model_length"`, `"insufficient_system_resource"`:
		return finishLength
	}
	return finishStop
}

// appendMessage writes a message or delta; reasoning fields (DeepSeek's
// reasoning_content, vLLM's and Ollama's reasoning) are not OpenAI's and
// are dropped with every other provider field.
func (tr *Translator) appendMessage(out, msg []byte, chunk bool, choice int, note bool) []byte {
	var kb keyBuf
	return appendMembers(out, msg, func(w writer, k, v []byte) writer {
		switch string(kb.canon(k)) {
		case "tool_calls":
			w.rawKey(k)
			start := len(w.out)
			if tr.q.strictResponse || tr.idBack != nil {
				w.out = tr.appendToolCalls(w.out, v, chunk, choice)
			} else {
				w.out = append(w.out, v...)
			}
			if note && named(k, "tool_calls") {
				tr.noteToolCalls(w.out[start:])
			}
		case "role", "content", "refusal", "function_call", "annotations", "audio":
			w.member(k, v)
			if note && (named(k, "content") || named(k, "refusal")) {
				tr.noteString(v)
			}
		default:
			tr.unknown(&w, k, v)
		}
		return w
	})
}

// unknown writes a member OpenAI's schema does not have: as it came, or for
// strict providers not at all.
func (tr *Translator) unknown(w *writer, k, v []byte) {
	if !tr.q.strictResponse {
		w.member(k, v)
	}
}

var typeFunction = []byte(`"function"`)

// appendToolCalls writes tool calls with the client's ids. For strict
// providers it also completes what OpenAI's SDKs need and some servers
// (Mistral) leave out: type on every call, and in streams an index, which
// their accumulators key fragments by.
func (tr *Translator) appendToolCalls(out, arr []byte, chunk bool, choice int) []byte {
	return appendArray(out, arr, func(out, call []byte) []byte {
		m, ok := objectMembers(call)
		if !ok {
			return append(out, call...)
		}
		w := writer{out: out}
		w.open()
		var hasIndex, hasType, hasID bool
		var kb keyBuf
		for k, v, ok := m.next(); ok; k, v, ok = m.next() {
			switch string(kb.canon(k)) {
			case "index":
				hasIndex = true
				w.member(k, v)
			case "type":
				hasType = true
				w.member(k, v)
			case "id":
				hasID = true
				w.rawKey(k)
				w.out = tr.appendClientID(w.out, v)
			case "function":
				w.rawKey(k)
				w.out = tr.appendFunction(w.out, v)
			default:
				tr.unknown(&w, k, v)
			}
		}
		if tr.q.strictResponse {
			if hasID && !hasType {
				w.key("type")
				w.out = append(w.out, typeFunction...)
			}
			if chunk && !hasIndex {
				w.key("index")
				w.out = strconv.AppendInt(w.out, int64(tr.toolIndex(choice, hasID)), 10)
			}
		}
		w.close()
		return w.out
	})
}

// toolIndex numbers index-less streamed tool calls per choice: a fragment
// with an id starts the next call, one without continues the last.
func (tr *Translator) toolIndex(choice int, starts bool) int {
	for len(tr.toolCalls) <= choice {
		tr.toolCalls = append(tr.toolCalls, 0)
	}
	if starts {
		tr.toolCalls[choice]++
	}
	return max(tr.toolCalls[choice]-1, 0)
}

// appendClientID writes a tool-call id, mapped back if the request
// rewrote it.
func (tr *Translator) appendClientID(out, v []byte) []byte {
	if tr.idBack != nil {
		if s, ok := stringValue(v); ok {
			if orig, ok := tr.idBack[string(s)]; ok {
				return jsonform.AppendString(out, orig)
			}
		}
	}
	return append(out, v...)
}

// appendFunction writes a tool call's function; for strict providers an
// arguments object (some servers send one) becomes the JSON string OpenAI
// clients parse.
func (tr *Translator) appendFunction(out, fn []byte) []byte {
	if !tr.q.strictResponse {
		return append(out, fn...)
	}
	var kb keyBuf
	return appendMembers(out, fn, func(w writer, k, v []byte) writer {
		switch string(kb.canon(k)) {
		case "name":
			w.member(k, v)
		case "arguments":
			w.rawKey(k)
			if len(v) > 0 && (v[0] == '{' || v[0] == '[') {
				w.out = appendCompactString(w.out, v)
			} else {
				w.out = append(w.out, v...)
			}
		}
		return w
	})
}
