package resources

import (
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

type (
	anyMsg    = anypb.Any
	structMsg = structpb.Struct
)

// mustAny packs a message the builders just made; failure is a bug.
//
// Deterministically: a packed config's bytes are opaque to the cache's
// own deterministic marshal, and the same policy should give Envoy the
// same bytes, maps (a JSON format's Struct) included, so that only real
// changes show where resources are compared (Envoy 1.40's own hash
// reads packed configs unpacked). vtprotobuf's marshaler, which keeps no
// reflection tables, writes map entries in Go's random order.
func mustAny(m proto.Message) *anypb.Any {
	a := new(anypb.Any)
	if err := anypb.MarshalFrom(a, m, proto.MarshalOptions{Deterministic: true}); err != nil {
		panic(err)
	}
	return a
}

func mustStruct(m map[string]any) *structpb.Struct {
	s, err := structpb.NewStruct(m)
	if err != nil {
		panic(err)
	}
	return s
}

func dur(d time.Duration) *durationpb.Duration { return durationpb.New(d) }

func u32(v uint32) *wrapperspb.UInt32Value { return wrapperspb.UInt32(v) }

func socketAddress(host string, port int) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address:       host,
		PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(port)},
	}}}
}

func wrapBool(v bool) *wrapperspb.BoolValue { return wrapperspb.Bool(v) }
