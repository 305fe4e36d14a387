package extprocapp

import (
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
)

// vtMarshaler is what the vtprotobuf code go-control-plane ships (behind
// the vtprotobuf build tag, which the Makefile sets) adds to each message:
// a marshaller written out per message instead of protobuf-go's
// reflection, which was ext_proc's largest single cost in `make bench`.
type vtMarshaler interface {
	SizeVT() int
	MarshalToSizedBufferVTStrict(dAtA []byte) (int, error)
}

// vtCodec is gRPC's proto codec, marshalling with [vtMarshaler] where a
// message has it (the ext_proc replies, when built with the tag) and with
// the default codec otherwise. go-control-plane generates no vtprotobuf
// unmarshaller, so reading stays the default codec's.
type vtCodec struct{ encoding.CodecV2 }

func newVTCodec() vtCodec { return vtCodec{encoding.GetCodecV2("proto")} }

// Marshal implements [encoding.CodecV2], into a pooled buffer as the
// default codec does.
func (c vtCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(vtMarshaler)
	if !ok {
		return c.CodecV2.Marshal(v)
	}
	size := m.SizeVT()
	if mem.IsBelowBufferPoolingThreshold(size) {
		buf := make([]byte, size)
		if _, err := m.MarshalToSizedBufferVTStrict(buf); err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(buf)}, nil
	}
	pool := mem.DefaultBufferPool()
	buf := pool.Get(size)
	if _, err := m.MarshalToSizedBufferVTStrict(*buf); err != nil {
		pool.Put(buf)
		return nil, err
	}
	return mem.BufferSlice{mem.NewBuffer(buf, pool)}, nil
}
