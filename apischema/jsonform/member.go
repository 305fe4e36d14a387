package jsonform

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// ErrNotObject is the answer of the member functions to a document that
// is not one JSON object.
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

// Member returns the value (JSON text) of the top-level member named key
// of the object obj, the last when there are several; found is false
// when there is none.
func Member(obj []byte, key string) (value []byte, found bool, err error) {
	o, err := scan(obj)
	if err != nil {
		return nil, false, err
	}
	for _, m := range o.members {
		if m.key == key {
			value, found = obj[m.value:m.end], true
		}
	}
	return value, found, nil
}

// RemoveMember returns the JSON object obj without its top-level members
// named key. The other members are kept byte for byte; only the commas
// and spacing between members may change.
func RemoveMember(obj []byte, key string) ([]byte, error) {
	o, err := scan(obj)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(obj))
	out = append(out, obj[:o.open+1]...)
	kept := 0
	for _, m := range o.members {
		if m.key == key {
			continue
		}
		if kept > 0 {
			out = append(out, ',')
		}
		out = append(out, obj[m.start:m.end]...)
		kept++
	}
	tail := o.close
	if len(o.members) > 0 {
		tail = o.members[len(o.members)-1].end
	}
	return append(out, obj[tail:]...), nil
}

// replace does ReplaceMember's work and reports whether obj held key.
func replace(obj []byte, key, value string) (_ []byte, found bool, _ error) {
	o, err := scan(obj)
	if err != nil {
		return nil, false, err
	}
	var out []byte
	last := 0
	for _, m := range o.members {
		if m.key != key {
			continue
		}
		found = true
		out = append(append(out, obj[last:m.value]...), value...)
		last = m.end
	}
	return append(out, obj[last:]...), found, nil
}

// object is where a JSON object's parts are in its text: its braces and
// its top-level members, in order.
type object struct {
	open, close int
	members     []member
}

// member is one top-level member: its key, and where its key (start),
// value and end are.
type member struct {
	key               string
	start, value, end int
}

// scan finds the parts of the one JSON object obj.
func scan(obj []byte) (object, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return object{}, ErrNotObject
	}
	o := object{open: int(dec.InputOffset()) - 1}
	for dec.More() {
		from := int(dec.InputOffset())
		t, err := dec.Token()
		if err != nil {
			return object{}, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return object{}, err
		}
		end := int(dec.InputOffset())
		key, _ := t.(string)
		// Only spacing and the comma come before the key's quote.
		start := from + bytes.IndexByte(obj[from:end], '"')
		o.members = append(o.members, member{key: key, start: start, value: end - len(v), end: end})
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return object{}, ErrNotObject
	}
	o.close = int(dec.InputOffset()) - 1
	if _, err := dec.Token(); err != io.EOF {
		// Something after the object: not one document.
		return object{}, ErrNotObject
	}
	return o, nil
}
