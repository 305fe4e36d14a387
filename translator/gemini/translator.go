package gemini

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/translator"
	"github.com/switchyard/switchyard/translator/sse"
)

// Translator converts one attempt to a Gemini (generateContent) provider.
type Translator struct {
	t translator.Target

	// Set by Request.
	includeUsage bool
	// oneCall keeps only the first function call of an answer: the client
	// sent parallel_tool_calls false and Gemini has no such switch.
	oneCall bool

	// Set by EmbeddingsRequest.
	embedInputs   int
	embedBase64   bool
	embedEstimate int

	// Answer state. calls counts the function calls seen, which numbers
	// their ids and stream indexes.
	calls    int
	usage    openaiapi.Usage
	hasUsage bool

	// Stream state.
	r       sse.Reader
	started bool
	finish  string // the last finishReason seen
	blocked bool   // promptFeedback said the prompt was blocked
	done    bool
	failed  bool
}

// New returns a translator for one attempt.
func New(t translator.Target) *Translator {
	return &Translator{t: t}
}

// IsStream implements [translator.Translator.IsStream].
func (tr *Translator) IsStream(status int, h translator.Headers) bool {
	return status == http.StatusOK && strings.HasPrefix(h.Get("content-type"), "text/event-stream")
}

// Usage implements [translator.Translator.Usage].
func (tr *Translator) Usage() (openaiapi.Usage, bool) { return tr.usage, tr.hasUsage }

// thoughtSeparator joins a minted tool-call id and a Gemini 3 thought
// signature, the way LiteLLM smuggles signatures through OpenAI clients.
const thoughtSeparator = "__thought__"

// callID mints the OpenAI id of the n-th function call of this answer. It
// is derived from the completion id so that it is unique per request and
// the same on every run of a test.
func (tr *Translator) callID(n int) string {
	sum := sha256.Sum256([]byte(tr.t.ID + "/" + strconv.Itoa(n)))
	return "call_" + hex.EncodeToString(sum[:12])
}

func (tr *Translator) providerName() string { return tr.t.Provider.Name }

var (
	_ translator.Translator = (*Translator)(nil)
	_ translator.Embedder   = (*Translator)(nil)
)

// CheckRequest is the health check of a Gemini provider: one page of one
// model from models.list costs no tokens. The key travels in a header.
func CheckRequest(p *policy.Provider, key string) translator.Upstream {
	up := translator.Upstream{Path: p.BasePath + "/v1beta/models?pageSize=1"}
	if key != "" {
		up.Header = translator.Headers{{Key: "x-goog-api-key", Value: key}}
	}
	return up
}
