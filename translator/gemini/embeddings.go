package gemini

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/translator"
)

// maxBatchEmbed is batchEmbedContents' cap on requests in one call.
const maxBatchEmbed = 100

// EmbeddingsRequest implements [translator.Embedder.EmbeddingsRequest]:
// one input goes to :embedContent, several to :batchEmbedContents.
func (tr *Translator) EmbeddingsRequest(req *openaiapi.EmbeddingsRequest, _ []byte) (translator.Upstream, *openaiapi.Error) {
	if len(req.Input.Tokens) > 0 {
		return translator.Upstream{}, refuse("input", "this model embeds text only; token arrays are not supported")
	}
	texts := req.Input.Texts
	switch {
	case len(texts) == 0:
		return translator.Upstream{}, refuse("input", "input must hold at least one string")
	case len(texts) > maxBatchEmbed:
		return translator.Upstream{}, refuse("input", "this model embeds at most %d inputs per request", maxBatchEmbed)
	}
	model := "models/" + strings.TrimPrefix(tr.t.Model.Upstream, "models/")
	reqs := make([]embedRequest, len(texts))
	estimate := 0
	for i, text := range texts {
		reqs[i] = embedRequest{Model: model, Content: content{Parts: []part{{Text: text}}}, OutputDimensionality: req.Dimensions}
		estimate += estimateTokens(text)
	}
	var body []byte
	var err error
	method := ":batchEmbedContents"
	if len(reqs) == 1 {
		method = ":embedContent"
		body, err = json.Marshal(reqs[0])
	} else {
		body, err = json.Marshal(batchEmbedRequest{Requests: reqs})
	}
	if err != nil {
		return translator.Upstream{}, openaiapi.Errorf(http.StatusBadRequest, openaiapi.TypeInvalidRequest, "invalid_value", "the request cannot be encoded for the provider")
	}
	tr.embedInputs, tr.embedBase64, tr.embedEstimate = len(texts), req.EncodingFormat == "base64", estimate
	return tr.upstream(method, body), nil
}

// estimateTokens is the usage of one input: Gemini reports none for
// embeddings, so the gateway accounts ceil(characters/4), OpenAI's rule of
// thumb for English text.
func estimateTokens(s string) int {
	return (utf8.RuneCountInString(s) + 3) / 4
}

// EmbeddingsComplete implements [translator.Embedder.EmbeddingsComplete].
func (tr *Translator) EmbeddingsComplete(status int, h translator.Headers, body []byte) translator.Result {
	if status < 200 || status > 299 {
		return translator.ErrorResult(tr.errorFor(status, h, body))
	}
	var resp embedResponse
	if !isObject(body) || json.Unmarshal(body, &resp) != nil {
		return translator.ErrorResult(translator.GarbageError(tr.providerName(), "the body is not an embeddings response"))
	}
	vecs := resp.Embeddings
	if resp.Embedding != nil {
		vecs = []embedValues{*resp.Embedding}
	}
	if len(vecs) != tr.embedInputs || tr.embedInputs == 0 {
		return translator.ErrorResult(translator.GarbageError(tr.providerName(),
			"the answer holds "+strconv.Itoa(len(vecs))+" embeddings for "+strconv.Itoa(tr.embedInputs)+" inputs"))
	}
	list := openaiapi.EmbeddingList{Object: "list", Data: make([]openaiapi.Embedding, len(vecs)), Model: tr.t.ClientModel}
	for i, v := range vecs {
		if len(v.Values) == 0 {
			return translator.ErrorResult(translator.GarbageError(tr.providerName(), "an embedding has no values"))
		}
		list.Data[i] = openaiapi.Embedding{Object: "embedding", Index: i, Embedding: v.Values}
		if tr.embedBase64 {
			list.Data[i].Embedding = float32Base64(v.Values)
		}
	}
	tr.usage = openaiapi.Usage{PromptTokens: tr.embedEstimate, TotalTokens: tr.embedEstimate}
	tr.hasUsage = true
	list.Usage = tr.usage
	out, err := json.Marshal(list)
	if err != nil {
		return translator.ErrorResult(translator.GarbageError(tr.providerName(), "the answer cannot be re-encoded"))
	}
	return translator.Result{Status: http.StatusOK, Body: out}
}

// float32Base64 is OpenAI's base64 encoding of a vector: little-endian
// float32 values.
func float32Base64(vs []float64) string {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(v)))
	}
	return base64.StdEncoding.EncodeToString(b)
}
