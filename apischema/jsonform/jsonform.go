// Package jsonform decodes the JSON forms the client APIs accept in more
// than one shape, such as content that is a string or an array of parts,
// and rewrites one member of a client's body without re-encoding the rest
// (what the pass-through translators forward).
package jsonform

import (
	"bytes"
	"encoding/json"
	"errors"
)

// ErrShape is OneOrMany's answer to a value that is neither a string nor
// an array (null included): each caller says what it expected there.
var ErrShape = errors.New("neither a string nor an array")

// OneOrMany decodes b, a JSON string or array: a string is the one
// element one makes of it, an array is decoded element by element.
func OneOrMany[T any](b []byte, one func(string) T) ([]T, error) {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, err
		}
		return []T{one(s)}, nil
	case len(b) > 0 && b[0] == '[':
		var many []T
		if err := json.Unmarshal(b, &many); err != nil {
			return nil, err
		}
		return many, nil
	}
	return nil, ErrShape
}
