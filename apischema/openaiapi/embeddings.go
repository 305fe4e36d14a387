package openaiapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
)

// EmbeddingsRequest is a POST /v1/embeddings body.
type EmbeddingsRequest struct {
	Model          string         `json:"model"`
	Input          EmbeddingInput `json:"input"`
	EncodingFormat string         `json:"encoding_format,omitempty"`
	Dimensions     *int           `json:"dimensions,omitempty"`
	User           string         `json:"user,omitempty"`
}

// EmbeddingInput is the input of an embeddings request: one string, many
// strings, or token arrays (one or many).
type EmbeddingInput struct {
	Texts  []string
	Tokens [][]int
	// Single is true when the client sent one string or one token array.
	Single bool
}

// Len returns the number of inputs.
func (in *EmbeddingInput) Len() int { return len(in.Texts) + len(in.Tokens) }

// UnmarshalJSON implements [json.Unmarshaler].
func (in *EmbeddingInput) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	*in = EmbeddingInput{}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		in.Texts, in.Single = []string{s}, true
		return nil
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return errEmbeddingInput
	}
	if len(raw) == 0 {
		return nil
	}
	switch first := bytes.TrimSpace(raw[0]); {
	case len(first) > 0 && first[0] == '"':
		return json.Unmarshal(b, &in.Texts)
	case len(first) > 0 && first[0] == '[':
		return json.Unmarshal(b, &in.Tokens)
	default:
		var one []int
		if err := json.Unmarshal(b, &one); err != nil {
			return errEmbeddingInput
		}
		in.Tokens, in.Single = [][]int{one}, true
		return nil
	}
}

// MarshalJSON implements [json.Marshaler].
func (in EmbeddingInput) MarshalJSON() ([]byte, error) {
	switch {
	case in.Single && len(in.Texts) == 1:
		return json.Marshal(in.Texts[0])
	case in.Single && len(in.Tokens) == 1:
		return json.Marshal(in.Tokens[0])
	case in.Tokens != nil:
		return json.Marshal(in.Tokens)
	default:
		return json.Marshal(in.Texts)
	}
}

var errEmbeddingInput = errors.New("input must be a string, an array of strings, or token arrays")

// Limits OpenAI documents for one embeddings request.
const (
	MaxEmbeddingInputs = 2048
)

// embeddingsForm bounds no array: an input of token ids is a long array
// of numbers, as cheap to decode as its bytes.
var embeddingsForm = Form{What: "embeddings request", FreeForm: map[string]bool{"metadata": true}}

// ParseEmbeddingsRequest decodes and checks an embeddings request body.
func ParseEmbeddingsRequest(body []byte) (*EmbeddingsRequest, *Error) {
	var r EmbeddingsRequest
	if e := DecodeBody(body, &r, embeddingsForm); e != nil {
		return nil, e
	}
	if e := checkIdentity(r.Model, r.User); e != nil {
		return nil, e
	}
	if n := r.Input.Len(); n == 0 || n > MaxEmbeddingInputs {
		return nil, Errorf(http.StatusBadRequest, TypeInvalidRequest, "invalid_value", "input must hold between 1 and %d items", MaxEmbeddingInputs).WithParam("input")
	}
	for _, s := range r.Input.Texts {
		if s == "" {
			return nil, Errorf(http.StatusBadRequest, TypeInvalidRequest, "invalid_value", "input strings must not be empty").WithParam("input")
		}
	}
	switch r.EncodingFormat {
	case "", "float", "base64":
	default:
		return nil, Errorf(http.StatusBadRequest, TypeInvalidRequest, "invalid_value", "encoding_format must be float or base64").WithParam("encoding_format")
	}
	if r.Dimensions != nil && *r.Dimensions < 1 {
		return nil, Errorf(http.StatusBadRequest, TypeInvalidRequest, "invalid_value", "dimensions must be at least 1").WithParam("dimensions")
	}
	return &r, nil
}

// EmbeddingList is the body of an embeddings response.
type EmbeddingList struct {
	Object string      `json:"object"`
	Data   []Embedding `json:"data"`
	Model  string      `json:"model"`
	Usage  Usage       `json:"usage"`
}

// Embedding is one vector: a float array, or a base64 string of
// little-endian float32 values when the client asked for base64.
type Embedding struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"`
}
