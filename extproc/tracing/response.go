package tracing

import (
	"bytes"
	"encoding/json"

	"github.com/switchyard/switchyard/filters"
)

// Observe reads what a piece of the answer, as the client gets it, says
// of itself: its ID and model (the first seen), and why each choice
// stopped. A whole (buffered) answer's text is kept too when the request's
// content is recorded. It scans for the few keys it needs rather than
// decode every chunk: a JSON string cannot hold an unescaped `"key":`, and
// every API puts the answer's own id and model before its content.
func (t *Tracer) Observe(x *filters.Exchange, b []byte, whole bool) {
	if t == nil || x.Trace == nil {
		return
	}
	r := &x.Trace.Response
	if r.ID == "" {
		r.ID, _ = stringAt(b, "id")
	}
	if r.Model == "" {
		r.Model, _ = stringAt(b, "model")
	}
	for _, key := range []string{"finish_reason", "stop_reason"} {
		for rest := b; ; {
			v, next := stringAt(rest, key)
			if next < 0 {
				break
			}
			if v != "" {
				r.FinishReasons = append(r.FinishReasons, v)
			}
			rest = rest[next:]
		}
	}
	if whole && x.Route != nil && t.cfg.Captures(x.Route.Name, tenantOf(x)) {
		r.Text = answerText(b)
	}
}

func tenantOf(x *filters.Exchange) string {
	if x.Caller.Tenant == nil {
		return ""
	}
	return x.Caller.Tenant.Name
}

// stringAt finds the first "key": "value" of b and returns the value (""
// for a value that is not a string) and the offset after it; -1 when the
// key is not there.
func stringAt(b []byte, key string) (string, int) {
	pat := []byte(`"` + key + `"`)
	off := 0
	for {
		i := bytes.Index(b[off:], pat)
		if i < 0 {
			return "", -1
		}
		j := off + i + len(pat)
		j = skipSpace(b, j)
		if j >= len(b) || b[j] != ':' {
			off = j
			continue
		}
		j = skipSpace(b, j+1)
		if j >= len(b) || b[j] != '"' {
			return "", j
		}
		end := j + 1
		for end < len(b) && b[end] != '"' {
			if b[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(b) {
			return "", -1
		}
		var v string
		if json.Unmarshal(b[j:end+1], &v) != nil {
			return "", end + 1
		}
		return v, end + 1
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// answerText is the generated text of a whole answer in any of the
// client APIs: a chat completion's choices, a Messages answer's text
// blocks, a Responses answer's output text.
func answerText(b []byte) string {
	var body struct {
		Choices []struct {
			Message struct {
				Content *string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		Output []struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
	}
	if json.Unmarshal(b, &body) != nil {
		return ""
	}
	var out []byte
	for _, c := range body.Choices {
		if c.Message.Content != nil {
			out = append(out, *c.Message.Content...)
		}
	}
	for _, c := range body.Content {
		out = append(out, c.Text...)
	}
	for _, o := range body.Output {
		for _, c := range o.Content {
			out = append(out, c.Text...)
		}
	}
	return string(out)
}
