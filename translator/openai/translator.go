package openai

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/switchyard/switchyard/apischema/jsonform"
	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/translator"
	"github.com/switchyard/switchyard/translator/sse"
)

// Translator converts one attempt to an OpenAI-protocol provider: OpenAI,
// Azure OpenAI or an OpenAI-compatible server.
type Translator struct {
	t translator.Target
	q quirks

	// JSON spellings of the names answers carry, encoded once.
	clientModel []byte
	id          []byte

	// includeUsage is set when the client asked for a usage chunk.
	includeUsage bool
	// capField is the field the client sent its output cap in, to name it
	// back when the provider refuses the renamed one.
	capField string
	// idBack maps rewritten tool-call ids back to the client's.
	idBack map[string]string
	// base64 is set when the client asked for base64 embeddings.
	base64 bool

	r sse.Reader
	// toolCalls counts, per choice, tool calls started in a stream whose
	// deltas carry no index.
	toolCalls []int

	usage    openaiapi.Usage
	hasUsage bool
	// pendingUsage holds the client's usage chunk when the provider put
	// usage on a choice chunk; it goes out just before [DONE].
	pendingUsage []byte
	usageSent    bool
	done         bool
	failed       bool

	// sentText and sentError are what the last StreamChunk's events add
	// to the answer (translator.Reporter).
	sentText  []byte
	sentError string
}

// New returns a translator for one attempt, for a provider that follows
// OpenAI's protocol (any dialect quirks off).
func New(t translator.Target) *Translator { return NewWithDialect(t, DialectGeneric) }

// NewWithDialect returns a translator for one attempt whose
// openai_compatible provider is the server d names. For other kinds d is
// ignored.
func NewWithDialect(t translator.Target, d Dialect) *Translator {
	tr := &Translator{
		t:           t,
		q:           quirksFor(t.Provider, d),
		clientModel: jsonform.AppendString(nil, t.ClientModel),
		id:          jsonform.AppendString(nil, t.ID),
	}
	// StreamChunk is done with each event before it reads the next.
	tr.r.Borrow = true
	return tr
}

// IsStream implements [translator.Translator.IsStream].
func (tr *Translator) IsStream(status int, h translator.Headers) bool {
	return status == http.StatusOK && strings.HasPrefix(h.Get("content-type"), "text/event-stream")
}

// Usage implements [translator.Translator.Usage].
func (tr *Translator) Usage() (openaiapi.Usage, bool) { return tr.usage, tr.hasUsage }

// endpoint returns the request path of an operation ("chat/completions",
// "embeddings") and the headers every request carries.
func (tr *Translator) endpoint(op string) (string, translator.Headers) {
	p := tr.t.Provider
	h := make(translator.Headers, 2, 3)
	h[0] = translator.Header{Key: "content-type", Value: "application/json"}
	// The answer is parsed and rewritten, so it must arrive uncompressed.
	h[1] = translator.Header{Key: "accept-encoding", Value: "identity"}
	if p.Kind == policy.KindAzureOpenAI {
		if tr.t.Key != "" {
			h = append(h, translator.Header{Key: "api-key", Value: tr.t.Key})
		}
		return p.BasePath + "/openai/deployments/" + url.PathEscape(tr.t.Model.Upstream) + "/" + op + "?api-version=" + url.QueryEscape(p.APIVersion), h
	}
	if tr.t.Key != "" {
		h = append(h, translator.Header{Key: "authorization", Value: "Bearer " + tr.t.Key})
	}
	return p.BasePath + "/v1/" + op, h
}

var (
	_ translator.Translator = (*Translator)(nil)
	_ translator.Embedder   = (*Translator)(nil)
)

// CheckRequest is the health check of an OpenAI-style provider: listing
// models costs no tokens and needs the same key as a completion. Azure
// lists the resource's models under its API version.
func CheckRequest(p *policy.Provider, key string) translator.Upstream {
	if p.Kind == policy.KindAzureOpenAI {
		up := translator.Upstream{Path: p.BasePath + "/openai/models?api-version=" + url.QueryEscape(p.APIVersion)}
		if key != "" {
			up.Header = translator.Headers{{Key: "api-key", Value: key}}
		}
		return up
	}
	up := translator.Upstream{Path: p.BasePath + "/v1/models"}
	if key != "" {
		up.Header = translator.Headers{{Key: "authorization", Value: "Bearer " + key}}
	}
	return up
}
