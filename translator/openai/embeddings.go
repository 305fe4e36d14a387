package openai

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"strconv"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/translator"
)

// EmbeddingsRequest implements [translator.Embedder.EmbeddingsRequest].
func (tr *Translator) EmbeddingsRequest(req *openaiapi.EmbeddingsRequest, raw []byte) (translator.Upstream, *openaiapi.Error) {
	if tr.q.noTokenEmbeddings && len(req.Input.Tokens) > 0 {
		return translator.Upstream{}, tr.unsupported("input", "model %q embeds text only; send strings, not token arrays", tr.t.ClientModel)
	}
	tr.base64 = req.EncodingFormat == "base64"
	dimsDone := false
	w, e := tr.patchBody(raw, 16, func(w writer, name, k, v []byte) (writer, *openaiapi.Error) {
		switch string(name) {
		case "encoding_format":
			// Float is every server's default; asking for nothing is how
			// a float-only server is asked for floats.
			if !tr.q.floatEmbeddingsOnly {
				w.member(k, v)
			}
		case "dimensions":
			if !dimsDone && string(v) != "null" {
				w.key(tr.q.dimensionsField)
				w.out = append(w.out, v...)
				dimsDone = true
			}
		default:
			if tr.q.params[string(name)] != dropParam {
				w.member(k, v)
			}
		}
		return w, nil
	})
	if e != nil {
		return translator.Upstream{}, e
	}
	w.close()
	path, h := tr.endpoint("embeddings")
	return translator.Upstream{Path: path, Header: h, Body: w.out}, nil
}

// EmbeddingsComplete implements [translator.Embedder.EmbeddingsComplete].
// Vectors come back in the encoding the client asked for, whatever the
// provider sent: base64 is little-endian float32, as OpenAI encodes it.
func (tr *Translator) EmbeddingsComplete(status int, h translator.Headers, body []byte) translator.Result {
	if status < 200 || status > 299 {
		return translator.ErrorResult(tr.upstreamError(status, h, body))
	}
	garbage := func(what string) translator.Result {
		return translator.ErrorResult(translator.GarbageError(tr.t.Provider.Name, what))
	}
	hd, ok := scanHead(body)
	if !ok && !validJSON(body) {
		return garbage("the body is not JSON")
	}
	if !ok || len(hd.data) == 0 || hd.data[0] != '[' {
		return garbage("the body is not an embedding list")
	}
	tr.capture(&hd)
	w := writer{out: make([]byte, 0, len(body)+len(tr.clientModel)+32)}
	w.open()
	w.key("object")
	w.out = append(w.out, `"list"`...)
	w.key("data")
	out, err := tr.appendEmbeddings(w.out, hd.data)
	if err != "" {
		return garbage(err)
	}
	w.out = out
	w.key("model")
	w.out = append(w.out, tr.clientModel...)
	w.key("usage")
	if len(hd.usage) > 0 && hd.usage[0] == '{' {
		w.out = tr.appendUsage(w.out, hd.usage)
	} else {
		// The SDKs require usage; a server that reports none gets zeros,
		// and the gateway accounts nothing (Usage reports none seen).
		w.out = append(w.out, `{"prompt_tokens":0,"total_tokens":0}`...)
	}
	w.close()
	return translator.Result{Status: http.StatusOK, Body: w.out}
}

// appendEmbeddings writes the data array; err says what was unreadable.
func (tr *Translator) appendEmbeddings(out, arr []byte) ([]byte, string) {
	var err string
	n := 0
	out = appendArray(out, arr, func(out, item []byte) []byte {
		if err == "" {
			out, err = tr.appendEmbedding(out, item, n)
		}
		n++
		return out
	})
	if err != "" {
		return nil, err
	}
	return out, ""
}

// appendEmbedding writes the n-th item of the data array.
func (tr *Translator) appendEmbedding(out, item []byte, n int) ([]byte, string) {
	m, ok := objectMembers(item)
	if !ok {
		return nil, "an embedding is not an object"
	}
	index := strconv.AppendInt(nil, int64(n), 10)
	var vec []byte
	var kb keyBuf
	for k, v, ok := m.next(); ok; k, v, ok = m.next() {
		switch string(kb.canon(k)) {
		case "index":
			index = v
		case "embedding":
			vec = v
		}
	}
	w := writer{out: out}
	w.open()
	w.key("object")
	w.out = append(w.out, `"embedding"`...)
	w.key("index")
	w.out = append(w.out, index...)
	w.key("embedding")
	var err string
	if w.out, err = tr.appendVector(w.out, vec); err != "" {
		return nil, err
	}
	w.close()
	return w.out, ""
}

// appendVector writes one vector in the client's encoding.
func (tr *Translator) appendVector(out, v []byte) ([]byte, string) {
	switch {
	case len(v) > 0 && v[0] == '[':
		if !tr.base64 {
			return append(out, v...), ""
		}
		var fs []float32
		if json.Unmarshal(v, &fs) != nil {
			return nil, "an embedding is not an array of numbers"
		}
		buf := make([]byte, 4*len(fs))
		for i, f := range fs {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(f))
		}
		out = append(out, '"')
		out = base64.StdEncoding.AppendEncode(out, buf)
		return append(out, '"'), ""
	case len(v) > 0 && v[0] == '"':
		if tr.base64 {
			return append(out, v...), ""
		}
		s, _ := stringValue(v)
		buf, err := base64.StdEncoding.AppendDecode(nil, s)
		if err != nil || len(buf)%4 != 0 {
			return nil, "an embedding is not base64 float32"
		}
		out = append(out, '[')
		for i := 0; i < len(buf); i += 4 {
			if i > 0 {
				out = append(out, ',')
			}
			f := math.Float32frombits(binary.LittleEndian.Uint32(buf[i:]))
			if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
				return nil, "an embedding holds a value JSON cannot carry"
			}
			out = strconv.AppendFloat(out, float64(f), 'g', -1, 32)
		}
		return append(out, ']'), ""
	}
	return nil, "an embedding has no vector"
}
