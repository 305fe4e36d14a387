package providersim

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"
)

// dialect is one provider API: its endpoints, credential, response headers
// and native error bodies.
type dialect interface {
	// routes registers the kind's endpoints on p.
	routes(p *provider)
	// streaming reports whether the request asks for a streamed reply, so
	// stream-only faults know whether they apply.
	streaming(r *http.Request, body []byte) bool
	// authorized reports whether the request carries key in the kind's
	// auth header.
	authorized(r *http.Request, key string) bool
	// authError is the kind's answer to a wrong or missing key.
	authError() apiError
	// headers sets the request id and rate-limit headers every response of
	// the kind carries.
	headers(h http.Header, q quota)
	// statusError is the kind's native error for an HTTP status.
	statusError(status int, retryAfter time.Duration) apiError
	// writeError writes e in the kind's error envelope.
	writeError(w http.ResponseWriter, e apiError)
	// malformed is a 200 body that a client of the kind cannot parse.
	malformed(stream bool) (contentType string, body []byte)
}

func newDialect(k Kind) dialect {
	switch k {
	case KindOpenAI:
		return openAI{flavor: flavorOpenAI}
	case KindAzureOpenAI:
		return openAI{flavor: flavorAzure}
	case KindOpenAICompatible:
		return openAI{flavor: flavorCompatible}
	case KindAnthropic:
		return anthropic{}
	case KindGemini:
		return gemini{}
	}
	return nil
}

// apiError is an error before it is put in a kind's envelope. Fields that a
// kind has no slot for are ignored by its writer.
type apiError struct {
	status int
	// typ is OpenAI's and Anthropic's error.type, Gemini's error.status.
	typ string
	// code is OpenAI's error.code and Gemini's ErrorInfo reason.
	code    string
	param   string
	message string
	// retryAfter, when set, goes out as retry-after headers (and Gemini's
	// RetryInfo).
	retryAfter time.Duration
}

// retryAfterSeconds renders a retry-after header value: whole seconds,
// rounded up, at least one.
func retryAfterSeconds(d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second)
	return strconv.FormatInt(max(1, s), 10)
}

// streamFlag reads the "stream" field that OpenAI and Anthropic share.
func streamFlag(body []byte) bool {
	var s struct {
		Stream bool `json:"stream"`
	}
	_ = json.Unmarshal(body, &s) // a body that does not parse is not a stream request
	return s.Stream
}

func chars(s string) int { return utf8.RuneCountInString(s) }

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Only the simulator's own wire structs are marshalled here.
		panic(err)
	}
	return b
}

// sseData frames one unnamed server-sent event.
func sseData(payload []byte) []byte {
	b := make([]byte, 0, len(payload)+8)
	b = append(b, "data: "...)
	b = append(b, payload...)
	return append(b, "\n\n"...)
}
