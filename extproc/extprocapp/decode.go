package extprocapp

import (
	"math"
	"unicode/utf8"
	"unsafe"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/structpb"
)

// decodeProcessingRequest reads b into m without protobuf-go's reflection
// (about 7 % of ext_proc's CPU when every message went through
// proto.Unmarshal; go-control-plane generates no vtprotobuf unmarshaller).
// It knows only what Envoy sends us: headers, bodies, attributes whose
// values are scalars, protocol_config, an empty metadata_context and
// observability_mode, each message field at most once where proto would
// merge. On anything else (another field, an unknown one, a repeated
// message, a nested Struct, invalid UTF-8, malformed wire data) it
// reports false with m half filled, and the caller must read b with
// proto.Unmarshal, which then gives the exact result or error. So this
// path never has to reproduce proto's merging, unknown-field or error
// rules, only be right on what it takes.
//
// Bytes fields (bodies, raw header values) alias b, which the caller must
// own and never change.
func decodeProcessingRequest(b []byte, m *extprocv3.ProcessingRequest) bool {
	m.Reset()
	f := fields{b: b}
	for f.next() {
		ok := true
		switch {
		case f.num == 10 && f.typ == protowire.VarintType: // observability_mode
			m.ObservabilityMode = f.x != 0
		case f.typ != protowire.BytesType:
			return false
		case (f.num == 2 || f.num == 3) && m.Request == nil: // request_headers, response_headers
			h := &extprocv3.HttpHeaders{}
			if f.num == 2 {
				m.Request = &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: h}
			} else {
				m.Request = &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: h}
			}
			ok = decodeHeaders(f.v(), h)
		case (f.num == 4 || f.num == 5) && m.Request == nil: // request_body, response_body
			h := &extprocv3.HttpBody{}
			if f.num == 4 {
				m.Request = &extprocv3.ProcessingRequest_RequestBody{RequestBody: h}
			} else {
				m.Request = &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: h}
			}
			ok = decodeBody(f.v(), h)
		case f.num == 8 && len(f.v()) == 0 && m.MetadataContext == nil:
			// metadata_context: Envoy sends it empty on every message when,
			// as here, no namespace is forwarded.
			m.MetadataContext = &corev3.Metadata{}
		case f.num == 9: // attributes
			ok = decodeAttribute(f.v(), m)
		case f.num == 11 && m.ProtocolConfig == nil: // protocol_config, on each stream's first message
			m.ProtocolConfig = &extprocv3.ProtocolConfiguration{}
			ok = decodeProtocolConfig(f.v(), m.ProtocolConfig)
		default:
			return false
		}
		if !ok {
			return false
		}
	}
	return !f.bad
}

func decodeBody(b []byte, h *extprocv3.HttpBody) bool {
	f := fields{b: b}
	for f.next() {
		switch {
		case f.num == 1 && f.typ == protowire.BytesType:
			h.Body = ownedBytes(f.v())
		case f.num == 2 && f.typ == protowire.VarintType:
			h.EndOfStream = f.x != 0
		default:
			return false
		}
	}
	return !f.bad
}

func decodeHeaders(b []byte, h *extprocv3.HttpHeaders) bool {
	f := fields{b: b}
	for f.next() {
		switch {
		case f.num == 1 && f.typ == protowire.BytesType && h.Headers == nil: // a HeaderMap
			h.Headers = &corev3.HeaderMap{}
			if !decodeHeaderMap(f.v(), h.Headers) {
				return false
			}
		case f.num == 3 && f.typ == protowire.VarintType:
			h.EndOfStream = f.x != 0
		default:
			return false
		}
	}
	return !f.bad
}

// decodeHeaderMap allocates per map, not per header: allocation was most
// of what proto.Unmarshal cost here, so a first pass counts the headers
// and the values come from one array.
func decodeHeaderMap(b []byte, hm *corev3.HeaderMap) bool {
	n := 0
	for c := (fields{b: b}); c.next(); {
		n++
	}
	vals := make([]corev3.HeaderValue, n)
	hm.Headers = make([]*corev3.HeaderValue, n)
	f := fields{b: b}
	for i := 0; f.next(); i++ {
		if f.num != 1 || f.typ != protowire.BytesType {
			return false
		}
		hv := &vals[i]
		hm.Headers[i] = hv
		g := fields{b: f.v()}
		for g.next() {
			ok := g.typ == protowire.BytesType
			switch {
			case !ok:
			case g.num == 1:
				hv.Key, ok = ownedString(g.v())
			case g.num == 2:
				hv.Value, ok = ownedString(g.v())
			case g.num == 3:
				hv.RawValue = ownedBytes(g.v())
			default:
				ok = false
			}
			if !ok {
				return false
			}
		}
		if g.bad {
			return false
		}
	}
	return !f.bad
}

func decodeProtocolConfig(b []byte, c *extprocv3.ProtocolConfiguration) bool {
	f := fields{b: b}
	for f.next() {
		switch {
		case f.typ != protowire.VarintType:
			return false
		case f.num == 1:
			c.RequestBodyMode = filterv3.ProcessingMode_BodySendMode(int32(f.x))
		case f.num == 2:
			c.ResponseBodyMode = filterv3.ProcessingMode_BodySendMode(int32(f.x))
		case f.num == 3:
			c.SendBodyWithoutWaitingForHeaderResponse = f.x != 0
		default:
			return false
		}
	}
	return !f.bad
}

// decodeAttribute reads one entry of the attributes map: Envoy sends one
// per filter name, a Struct of the attributes the filter asked for.
func decodeAttribute(b []byte, m *extprocv3.ProcessingRequest) bool {
	key, s, ok := decodeMapEntry(b, decodeStruct)
	if !ok {
		return false
	}
	if m.Attributes == nil {
		m.Attributes = make(map[string]*structpb.Struct, 1)
	}
	m.Attributes[key] = s // a repeated key: the last entry wins, as in proto
	return true
}

func decodeStruct(b []byte, s *structpb.Struct) bool {
	f := fields{b: b}
	for f.next() {
		if f.num != 1 || f.typ != protowire.BytesType {
			return false
		}
		key, val, ok := decodeMapEntry(f.v(), decodeScalarValue)
		if !ok {
			return false
		}
		if s.Fields == nil {
			s.Fields = make(map[string]*structpb.Value)
		}
		s.Fields[key] = val
	}
	return !f.bad
}

// decodeMapEntry reads a map entry: its string key (field 1) and its
// message value (field 2) read by value, empty when absent, as proto has
// an entry without a value.
func decodeMapEntry[V any](b []byte, value func([]byte, *V) bool) (string, *V, bool) {
	var key string
	var v *V
	f := fields{b: b}
	for f.next() {
		ok := f.typ == protowire.BytesType
		switch {
		case !ok:
		case f.num == 1:
			key, ok = ownedString(f.v())
		case f.num == 2 && v == nil:
			v = new(V)
			ok = value(f.v(), v)
		default:
			ok = false
		}
		if !ok {
			return "", nil, false
		}
	}
	if f.bad {
		return "", nil, false
	}
	if v == nil {
		v = new(V)
	}
	return key, v, true
}

// decodeScalarValue reads a google.protobuf.Value holding null, a number,
// a string or a bool: what Envoy's attributes (attempt count, cluster
// name) are. A nested struct or list goes to proto.Unmarshal, which also
// keeps its recursion limit.
func decodeScalarValue(b []byte, val *structpb.Value) bool {
	f := fields{b: b}
	for f.next() {
		// A kind seen again replaces the last, as in proto.
		switch {
		case f.num == 1 && f.typ == protowire.VarintType:
			val.Kind = &structpb.Value_NullValue{NullValue: structpb.NullValue(int32(f.x))}
		case f.num == 2 && f.typ == protowire.Fixed64Type:
			val.Kind = &structpb.Value_NumberValue{NumberValue: math.Float64frombits(f.x)}
		case f.num == 3 && f.typ == protowire.BytesType:
			s, ok := ownedString(f.v())
			if !ok {
				return false
			}
			val.Kind = &structpb.Value_StringValue{StringValue: s}
		case f.num == 4 && f.typ == protowire.VarintType:
			val.Kind = &structpb.Value_BoolValue{BoolValue: f.x != 0}
		default:
			return false
		}
	}
	return !f.bad
}

// fields walks the fields of a message with protowire. After each true
// from next, num and typ are the field's, v() its value if
// length-delimited and x if a varint or fixed. next returns false at the
// end, and also at malformed data or a group, setting bad. It keeps
// offsets, not slices, so that stepping writes no pointer: the write
// barrier on each step cost a fifth of the time while the GC runs.
type fields struct {
	b      []byte
	off    int
	num    protowire.Number
	typ    protowire.Type
	x      uint64
	vs, ve int
	bad    bool
}

func (f *fields) v() []byte { return f.b[f.vs:f.ve] }

func (f *fields) next() bool {
	if f.off == len(f.b) {
		return false
	}
	// ConsumeVarint rather than ConsumeTag and ConsumeBytes, which wrap
	// it: two calls fewer on each step, the same checks.
	tag, n := protowire.ConsumeVarint(f.b[f.off:])
	if n < 0 {
		f.bad = true
		return false
	}
	f.num, f.typ = protowire.DecodeTag(tag)
	if f.num < protowire.MinValidNumber || f.num > protowire.MaxValidNumber {
		f.bad = true
		return false
	}
	f.off += n
	rest := f.b[f.off:]
	switch f.typ {
	case protowire.VarintType:
		f.x, n = protowire.ConsumeVarint(rest)
	case protowire.Fixed64Type:
		f.x, n = protowire.ConsumeFixed64(rest)
	case protowire.Fixed32Type:
		var x uint32
		x, n = protowire.ConsumeFixed32(rest)
		f.x = uint64(x)
	case protowire.BytesType:
		var l uint64
		if l, n = protowire.ConsumeVarint(rest); n < 0 || l > uint64(len(rest)-n) {
			n = -1
			break
		}
		f.vs = f.off + n
		n += int(l)
		f.ve = f.off + n
	default:
		n = -1
	}
	if n < 0 {
		f.bad = true
		return false
	}
	f.off += n
	return true
}

// ownedString is a proto3 string field aliasing the caller's buffer, as
// vtprotobuf's UnmarshalVTUnsafe does: no allocation, and safe since the
// buffer is never written (the bytes fields aliasing it cover only their
// own bytes). Like proto.Unmarshal it refuses invalid UTF-8.
func ownedString(v []byte) (string, bool) {
	if !utf8.Valid(v) {
		return "", false
	}
	return unsafe.String(unsafe.SliceData(v), len(v)), true
}

// ownedBytes aliases a bytes field into the caller's buffer, capped so an
// append cannot write over the next field, and nil when empty as proto
// leaves it.
func ownedBytes(v []byte) []byte {
	if len(v) == 0 {
		return nil
	}
	return v[:len(v):len(v)]
}
