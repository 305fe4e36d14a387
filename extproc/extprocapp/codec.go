package extprocapp

import (
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
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
// unmarshaller: Envoy's messages are read by [decodeProcessingRequest],
// anything else by the default codec.
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

// Unmarshal implements [encoding.CodecV2]. gRPC recycles data's buffers
// once this returns, so the default codec reads from a pooled copy and
// copies every bytes field out of it again; a copy of our own instead
// lets the bodies and raw header values alias it.
func (c vtCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(*extprocv3.ProcessingRequest)
	if !ok {
		return c.CodecV2.Unmarshal(data, v)
	}
	b := data.Materialize()
	if decodeProcessingRequest(b, m) {
		return nil
	}
	return proto.Unmarshal(b, m)
}
