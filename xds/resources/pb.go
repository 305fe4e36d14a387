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

// anyTypePrefix is the type URL's prefix anypb.New writes.
const anyTypePrefix = "type.googleapis.com/"

type (
	anyMsg    = anypb.Any
	structMsg = structpb.Struct
)

// vtMessage is a message with vtprotobuf's generated marshaler, as
// go-control-plane's are when built with -tags=vtprotobuf.
type vtMessage interface {
	proto.Message
	MarshalVTStrict() ([]byte, error)
}

// mustAny packs a message the builders just made; failure is a bug.
//
// anypb.New marshals by reflection, and reflection keeps, for the life
// of the process, the full descriptor and the field coders of every
// message type it has walked: about 1.6 MB of an idle node's 6 MB live
// heap, for a marshal done once per policy. vtprotobuf's generated
// marshaler keeps nothing; its strict form writes fields in number order
// and map entries sorted, as a deterministic marshal would.
func mustAny(m proto.Message) *anypb.Any {
	if vt, ok := m.(vtMessage); ok {
		b, err := vt.MarshalVTStrict()
		if err != nil {
			panic(err)
		}
		return &anypb.Any{TypeUrl: anyTypePrefix + string(m.ProtoReflect().Descriptor().FullName()), Value: b}
	}
	a, err := anypb.New(m)
	if err != nil {
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
