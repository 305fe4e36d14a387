package jsonform

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// ErrNotObject is the answer of ReplaceMember and SetMember to a document
// that is not one JSON object.
var ErrNotObject = errors.New("not a JSON object")

// ReplaceMember returns the JSON object obj with the value of every
// top-level member named key replaced by value (JSON text); the rest of
// the bytes are kept as they are. A pass-through uses it to change the
// one member it owns and forward everything else the client wrote,
// whether the gateway knows it or not.
func ReplaceMember(obj []byte, key, value string) ([]byte, error) {
	out, _, err := replace(obj, key, value)
	return out, err
}

// SetMember is ReplaceMember, but adds the member, last, to an object
// that has none.
func SetMember(obj []byte, key, value string) ([]byte, error) {
	out, found, err := replace(obj, key, value)
	if err != nil || found {
		return out, err
	}
	end := bytes.LastIndexByte(out, '}')
	name, _ := json.Marshal(key)
	set := make([]byte, 0, len(out)+len(name)+len(value)+2)
	set = append(set, out[:end]...)
	if len(bytes.TrimSpace(out[bytes.IndexByte(out, '{')+1:end])) > 0 {
		set = append(set, ',')
	}
	set = append(append(append(set, name...), ':'), value...)
	return append(set, out[end:]...), nil
}

// replace does ReplaceMember's work and reports whether obj held key.
func replace(obj []byte, key, value string) (_ []byte, found bool, _ error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false, ErrNotObject
	}
	var out []byte
	last := 0
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false, err
		}
		if t != key {
			continue
		}
		found = true
		end := int(dec.InputOffset())
		start := end - len(v)
		out = append(append(out, obj[last:start]...), value...)
		last = end
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, false, ErrNotObject
	}
	if _, err := dec.Token(); err != io.EOF {
		// Something after the object: not one document.
		return nil, false, ErrNotObject
	}
	return append(out, obj[last:]...), found, nil
}
