package openai

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/apischema/jsonform"
	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/translator"
)

// Request implements [translator.Translator.Request]. raw must be the body
// req was parsed from: fields the gateway does not model are copied from it
// as they are.
func (tr *Translator) Request(req *openaiapi.ChatRequest, raw []byte) (translator.Upstream, *openaiapi.Error) {
	if e := tr.refuse(req); e != nil {
		return translator.Upstream{}, e
	}
	tr.includeUsage = req.IncludeUsage()
	switch {
	case req.MaxCompletionTokens != nil:
		tr.capField = "max_completion_tokens"
	case req.MaxTokens != nil:
		tr.capField = "max_tokens"
	}
	body, e := tr.patch(req, raw)
	if e != nil {
		return translator.Upstream{}, e
	}
	path, h := tr.endpoint("chat/completions")
	return translator.Upstream{Path: path, Header: h, Body: body}, nil
}

// refuse applies the rules that need the parsed request.
func (tr *Translator) refuse(req *openaiapi.ChatRequest) *openaiapi.Error {
	if tr.q.noToolChoice && req.ToolChoice != nil && (req.ToolChoice.Function != "" || req.ToolChoice.Mode == "required") {
		return tr.unsupported("tool_choice", "model %q cannot be forced to call a tool; send tool_choice \"auto\" or \"none\"", tr.t.ClientModel)
	}
	if tr.q.dataImagesOnly {
		for i, m := range req.Messages {
			for j, p := range m.Content.Parts {
				if p.Type == "image_url" && p.ImageURL != nil && !strings.HasPrefix(p.ImageURL.URL, "data:") {
					return tr.unsupported("messages["+strconv.Itoa(i)+"].content["+strconv.Itoa(j)+"].image_url.url",
						"model %q takes images only as base64 data URLs (data:image/...;base64,...), not by http(s) URL", tr.t.ClientModel)
				}
			}
		}
	}
	return nil
}

func (tr *Translator) unsupported(param, format string, args ...any) *openaiapi.Error {
	return openaiapi.Errorf(http.StatusBadRequest, openaiapi.TypeInvalidRequest, "unsupported_parameter", format, args...).WithParam(param)
}

// patch rewrites the client's body for the provider in one pass. Fields the
// gateway owns are written once, where the client first put them, and
// every other spelling of them is dropped, so that a duplicate or
// differently cased key cannot override what the gateway decided (which
// model is called, how many tokens it may write).
func (tr *Translator) patch(req *openaiapi.ChatRequest, raw []byte) ([]byte, *openaiapi.Error) {
	q := &tr.q
	// The cap is always sent, the model's default when the client set
	// none: the budget reserved for it, and the provider's own default
	// may be far higher.
	limit := tr.t.OutputLimit(req.OutputCap())
	streamOpts := req.Stream && q.streamOptions
	dropTools := q.noToolChoice && req.ToolChoice != nil && req.ToolChoice.Mode == "none"
	walkMessages := q.shortToolIDs || q.dropMessageName || (q.developerAsSystem && hasDeveloper(req))
	var capDone, optsDone, seedDone bool
	w, e := tr.patchBody(raw, 48, func(w writer, name, k, v []byte) (writer, *openaiapi.Error) {
		switch string(name) {
		case "max_tokens", "max_completion_tokens":
			if limit > 0 && !capDone {
				w.key(q.capField)
				w.out = strconv.AppendInt(w.out, int64(limit), 10)
				capDone = true
			}
		case "stream_options":
			if streamOpts && !optsDone {
				w.key("stream_options")
				w.out = appendStreamOptions(w.out, v)
				optsDone = true
			}
		case "seed":
			if req.Seed != nil && !seedDone {
				w.key(q.seedField)
				w.out = strconv.AppendInt(w.out, *req.Seed, 10)
				seedDone = true
			}
		case "random_seed":
			// A client that knows Mistral may send its field; seed wins.
			if q.seedField != "random_seed" || req.Seed == nil {
				w.member(k, v)
			}
		case "messages":
			if walkMessages {
				w.rawKey(k)
				w.out = tr.appendMessages(w.out, v)
			} else {
				w.member(k, v)
			}
		case "tools":
			if !dropTools {
				w.member(k, v)
			}
		case "tool_choice":
			if !q.noToolChoice {
				w.member(k, v)
			}
		default:
			switch q.params[string(name)] {
			case dropParam:
			case refuseParam:
				if !isEmptyValue(v) && !(string(name) == "n" && string(v) == "1") {
					return w, tr.unsupported(string(name), "model %q does not support '%s'", tr.t.ClientModel, name)
				}
			default:
				w.member(k, v)
			}
		}
		return w, nil
	})
	if e != nil {
		return nil, e
	}
	if streamOpts && !optsDone {
		w.key("stream_options")
		w.out = appendStreamOptions(w.out, nil)
	}
	if limit > 0 && !capDone {
		w.key(q.capField)
		w.out = strconv.AppendInt(w.out, int64(limit), 10)
	}
	w.close()
	return w.out, nil
}

// patchBody starts the provider's form of the client's body raw, with room
// for extra bytes: the model is the upstream one, written once where the
// client first put it (else at the end), and f writes through w what each
// other member, given with its canonical name, becomes, or refuses the
// request. The caller may add members before it closes w. A body that is
// not a well-formed object is refused.
func (tr *Translator) patchBody(raw []byte, extra int, f func(w writer, name, key, val []byte) (writer, *openaiapi.Error)) (writer, *openaiapi.Error) {
	m, ok := objectMembers(raw)
	if !ok {
		return writer{}, invalidBody()
	}
	w := writer{out: make([]byte, 0, len(raw)+len(tr.t.Model.Upstream)+extra)}
	w.open()
	modelDone := false
	var kb keyBuf
	for k, v, ok := m.next(); ok; k, v, ok = m.next() {
		name := kb.canon(k)
		if string(name) != "model" {
			var e *openaiapi.Error
			if w, e = f(w, name, k, v); e != nil {
				return writer{}, e
			}
		} else if !modelDone {
			tr.putModel(&w)
			modelDone = true
		}
	}
	if m.bad {
		return writer{}, invalidBody()
	}
	if !modelDone {
		tr.putModel(&w)
	}
	return w, nil
}

// putModel writes the model member of a provider request.
func (tr *Translator) putModel(w *writer) {
	w.key("model")
	w.out = jsonform.AppendString(w.out, tr.t.Model.Upstream)
}

func hasDeveloper(req *openaiapi.ChatRequest) bool {
	for i := range req.Messages {
		if req.Messages[i].Role == "developer" {
			return true
		}
	}
	return false
}

func invalidBody() *openaiapi.Error {
	return openaiapi.Errorf(http.StatusBadRequest, openaiapi.TypeInvalidRequest, "invalid_json", "the request body is not a JSON object")
}

// appendStreamOptions writes the client's stream_options with
// include_usage on: the gateway accounts for every streamed token, and
// removes the usage chunk again when the client did not ask for it.
func appendStreamOptions(out, client []byte) []byte {
	w := writer{out: out}
	w.open()
	w.key("include_usage")
	w.out = append(w.out, "true"...)
	if m, ok := objectMembers(client); ok {
		var kb keyBuf
		for k, v, ok := m.next(); ok; k, v, ok = m.next() {
			if string(kb.canon(k)) != "include_usage" {
				w.member(k, v)
			}
		}
	}
	w.close()
	return w.out
}

// appendMessages writes messages with the dialect's per-message rules.
func (tr *Translator) appendMessages(out, arr []byte) []byte {
	var kb keyBuf
	return appendArray(out, arr, func(out, msg []byte) []byte {
		return appendMembers(out, msg, func(w writer, k, v []byte) writer {
			switch string(kb.canon(k)) {
			case "role":
				if s, _ := stringValue(v); tr.q.developerAsSystem && string(s) == "developer" {
					w.rawKey(k)
					w.out = append(w.out, `"system"`...)
					return w
				}
			case "name":
				if tr.q.dropMessageName {
					return w
				}
			case "tool_call_id":
				if tr.q.shortToolIDs {
					w.rawKey(k)
					w.out = tr.appendShortID(w.out, v)
					return w
				}
			case "tool_calls":
				if tr.q.shortToolIDs {
					w.rawKey(k)
					w.out = tr.appendToolCallIDs(w.out, v)
					return w
				}
			}
			w.member(k, v)
			return w
		})
	})
}

// appendToolCallIDs writes an assistant message's tool_calls with short ids.
func (tr *Translator) appendToolCallIDs(out, arr []byte) []byte {
	var kb keyBuf
	return appendArray(out, arr, func(out, call []byte) []byte {
		return appendMembers(out, call, func(w writer, k, v []byte) writer {
			if string(kb.canon(k)) == "id" {
				w.rawKey(k)
				w.out = tr.appendShortID(w.out, v)
			} else {
				w.member(k, v)
			}
			return w
		})
	})
}

// appendShortID writes a tool-call id in Mistral's form, nine
// alphanumerics. Ids already in that form are kept (Mistral's own come back
// that way); others are hashed, so the same id maps to the same short id in
// the assistant message and in the tool message, and in every later turn of
// the conversation. Two ids of one conversation colliding needs a 54-bit
// hash collision, which the translator accepts.
func (tr *Translator) appendShortID(out, v []byte) []byte {
	s, ok := stringValue(v)
	if !ok || isShortID(s) {
		return append(out, v...)
	}
	sum := uint64(14695981039346656037) // FNV-1a
	for _, c := range s {
		sum ^= uint64(c)
		sum *= 1099511628211
	}
	var id [9]byte
	const digits = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	for i := range id {
		id[i] = digits[sum%62]
		sum /= 62
	}
	if tr.idBack == nil {
		tr.idBack = map[string]string{}
	}
	tr.idBack[string(id[:])] = string(s)
	out = append(out, '"')
	out = append(out, id[:]...)
	return append(out, '"')
}

func isShortID(s []byte) bool {
	if len(s) != 9 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}
