package extprocapp

import (
	"bytes"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

func headerMap(kv ...string) *corev3.HeaderMap {
	m := &corev3.HeaderMap{}
	for i := 0; i < len(kv); i += 2 {
		m.Headers = append(m.Headers, &corev3.HeaderValue{Key: kv[i], RawValue: []byte(kv[i+1])})
	}
	return m
}

// envoyRequestHeaders is the per-attempt filter's request-headers message
// as Envoy 1.40 sends it (captured in e2e): raw header values, an empty
// metadata_context, the two attributes the filter asks for, and the
// protocol_config of a stream's first message.
func envoyRequestHeaders(tb testing.TB) *extprocv3.ProcessingRequest {
	attrs, err := structpb.NewStruct(map[string]any{"upstream.request_attempt_count": 2, "xds.cluster_name": "provider_anthropic"})
	if err != nil {
		tb.Fatal(err)
	}
	return &extprocv3.ProcessingRequest{
		Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{Headers: headerMap(
			":method", "POST", ":scheme", "http", ":path", "/v1/chat/completions", ":authority", "127.0.0.1:8080",
			"user-agent", "Go-http-client/1.1", "content-type", "application/json", "authorization", "Bearer sk-local-demo",
			"content-length", "300", "x-forwarded-proto", "http", "x-request-id", "4fe4010a-2fe4-41fb-a38f-ee30455f345c",
			"x-envoy-external-address", "127.0.0.1", "x-envoy-expected-rq-timeout-ms", "600000")}},
		MetadataContext: &corev3.Metadata{},
		Attributes:      map[string]*structpb.Struct{"envoy.filters.http.ext_proc": attrs},
		ProtocolConfig:  &extprocv3.ProtocolConfiguration{},
	}
}

func envoyRequestBody(n int) *extprocv3.ProcessingRequest {
	body := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"`)
	for len(body) < n-len(`"}]}`) {
		body = append(body, 'a'+byte(len(body)%26))
	}
	body = append(body, `"}]}`...)
	return &extprocv3.ProcessingRequest{
		Request:         &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{Body: body, EndOfStream: true}},
		MetadataContext: &corev3.Metadata{},
	}
}

func mustMarshal(tb testing.TB, m proto.Message) []byte {
	tb.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// wire builds a message field by field, for what the generated types
// cannot express: unknown fields, repeats, bad wire types, invalid UTF-8.
type wire []byte

func (w wire) bytes(num protowire.Number, v []byte) wire {
	return protowire.AppendBytes(protowire.AppendTag(w, num, protowire.BytesType), v)
}

func (w wire) varint(num protowire.Number, v uint64) wire {
	return protowire.AppendVarint(protowire.AppendTag(w, num, protowire.VarintType), v)
}

func header(key, value string) []byte { return wire(nil).bytes(1, []byte(key)).bytes(3, []byte(value)) }

func headers(hv ...[]byte) []byte {
	var m wire
	for _, h := range hv {
		m = m.bytes(1, h)
	}
	return wire(nil).bytes(1, m)
}

func attribute(key string, structBytes []byte) []byte {
	return wire(nil).bytes(1, []byte(key)).bytes(2, structBytes)
}

func structField(key string, value []byte) []byte {
	return wire(nil).bytes(1, wire(nil).bytes(1, []byte(key)).bytes(2, value))
}

// decodeCases: each wire message, and whether the fast path takes it
// (fast) or leaves it to proto.Unmarshal.
func decodeCases(tb testing.TB) []struct {
	name string
	in   []byte
	fast bool
} {
	nested, err := structpb.NewStruct(map[string]any{"xds.upstream_host_metadata": map[string]any{"provider": "openai"}})
	if err != nil {
		tb.Fatal(err)
	}
	number := protowire.AppendFixed64(protowire.AppendTag(nil, 2, protowire.Fixed64Type), 0x4000000000000000)
	return []struct {
		name string
		in   []byte
		fast bool
	}{
		{name: "request headers as Envoy sends them", in: mustMarshal(tb, envoyRequestHeaders(tb)), fast: true},
		{name: "request body", in: mustMarshal(tb, envoyRequestBody(300)), fast: true},
		{name: "response headers with string values", fast: true, in: mustMarshal(tb, &extprocv3.ProcessingRequest{
			Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
				Headers: &corev3.HeaderMap{Headers: []*corev3.HeaderValue{{Key: ":status", Value: "200"}, {Key: "x-é", Value: "ünïcode"}}}, EndOfStream: true}},
			ObservabilityMode: true,
			ProtocolConfig: &extprocv3.ProtocolConfiguration{RequestBodyMode: filterv3.ProcessingMode_BUFFERED,
				ResponseBodyMode: filterv3.ProcessingMode_STREAMED, SendBodyWithoutWaitingForHeaderResponse: true},
		})},
		{name: "response body", fast: true, in: mustMarshal(tb, &extprocv3.ProcessingRequest{
			Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{Body: []byte("data: {}\n\n")}}})},
		{name: "empty body, end of stream", fast: true, in: mustMarshal(tb, &extprocv3.ProcessingRequest{
			Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{EndOfStream: true}}})},
		{name: "empty message", in: nil, fast: true},
		{name: "headers message without a header map", in: wire(nil).bytes(2, nil), fast: true},
		{name: "header value that is not UTF-8 in raw_value", in: wire(nil).bytes(2, headers(header("x-bin", "\xff\xfe"))), fast: true},
		{name: "body twice: the last wins", in: wire(nil).bytes(4, wire(nil).bytes(1, []byte("a")).varint(2, 1).bytes(1, []byte("b"))), fast: true},
		{name: "bool without its value", in: protowire.AppendTag(nil, 10, protowire.VarintType)},
		{name: "observability_mode as a long varint", in: append(protowire.AppendTag(nil, 10, protowire.VarintType), 0x82, 0x80, 0x00), fast: true},
		{name: "attribute values of every scalar kind", fast: true, in: mustMarshal(tb, &extprocv3.ProcessingRequest{
			Attributes: map[string]*structpb.Struct{"f": {Fields: map[string]*structpb.Value{
				"n": structpb.NewNullValue(), "b": structpb.NewBoolValue(true), "s": structpb.NewStringValue("x"), "d": structpb.NewNumberValue(1.5), "empty": {},
			}}}})},
		{name: "attribute entry without a value", in: wire(nil).bytes(9, wire(nil).bytes(1, []byte("f"))), fast: true},
		{name: "attribute entry without a key", in: wire(nil).bytes(9, wire(nil).bytes(2, nil)), fast: true},
		{name: "struct field without a value", in: wire(nil).bytes(9, attribute("f", wire(nil).bytes(1, wire(nil).bytes(1, []byte("k"))))), fast: true},
		{name: "attribute key twice: the last entry wins", fast: true,
			in: wire(nil).bytes(9, attribute("f", structField("a", wire(nil).bytes(3, []byte("1"))))).bytes(9, attribute("f", structField("b", number)))},
		{name: "value with two kinds: the last wins", in: wire(nil).bytes(9, attribute("f", structField("a", wire(nil).bytes(3, []byte("1")).varint(4, 1)))), fast: true},

		{name: "request trailers", in: mustMarshal(tb, &extprocv3.ProcessingRequest{
			Request: &extprocv3.ProcessingRequest_RequestTrailers{RequestTrailers: &extprocv3.HttpTrailers{Trailers: headerMap("grpc-status", "0")}}})},
		{name: "metadata context with metadata", in: mustMarshal(tb, &extprocv3.ProcessingRequest{
			MetadataContext: &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"ns": nested}}})},
		{name: "attribute with a nested struct", in: mustMarshal(tb, &extprocv3.ProcessingRequest{Attributes: map[string]*structpb.Struct{"f": nested}})},
		{name: "attribute with a list", in: wire(nil).bytes(9, attribute("f", structField("l", wire(nil).bytes(6, nil))))},
		{name: "deprecated headers attributes", in: wire(nil).bytes(2, wire(nil).bytes(2, attribute("f", nil)))},
		{name: "flow control init", in: wire(nil).bytes(12, wire(nil).varint(1, 65536))},
		{name: "unknown field", in: append(mustMarshal(tb, envoyRequestBody(10)), wire(nil).varint(99, 7)...)},
		{name: "unknown field in a header", in: wire(nil).bytes(2, headers(append(header("a", "b"), wire(nil).varint(4, 1)...)))},
		{name: "unknown field in protocol_config", in: wire(nil).bytes(11, wire(nil).varint(4, 1))},
		{name: "known field with the wrong wire type", in: wire(nil).varint(2, 1)},
		{name: "request headers twice: merged", in: wire(nil).bytes(2, headers(header("a", "1"))).bytes(2, headers(header("b", "2")))},
		{name: "two members of the oneof: the last wins", in: wire(nil).bytes(2, headers(header("a", "1"))).bytes(4, nil)},
		{name: "header map twice: merged", in: wire(nil).bytes(2, append(headers(header("a", "1")), headers(header("b", "2"))...))},
		{name: "protocol_config twice: merged", in: wire(nil).bytes(11, wire(nil).varint(1, 2)).bytes(11, wire(nil).varint(2, 3))},
		{name: "metadata context twice", in: wire(nil).bytes(8, nil).bytes(8, nil)},
		{name: "struct value twice in an entry: merged", in: wire(nil).bytes(9, wire(nil).bytes(1, []byte("f")).bytes(2, structField("a", number)).bytes(2, structField("b", number)))},
		{name: "group", in: protowire.AppendTag(nil, 2, protowire.StartGroupType)},
		{name: "header key not UTF-8", in: wire(nil).bytes(2, headers(header("\xff", "v")))},
		{name: "header string value not UTF-8", in: wire(nil).bytes(2, headers(wire(nil).bytes(1, []byte("k")).bytes(2, []byte("\xc3"))))},
		{name: "attribute key not UTF-8", in: wire(nil).bytes(9, attribute("\xff", nil))},
		{name: "struct key not UTF-8", in: wire(nil).bytes(9, attribute("f", structField("\xff", nil)))},
		{name: "string value not UTF-8", in: wire(nil).bytes(9, attribute("f", structField("k", wire(nil).bytes(3, []byte("\xff")))))},
		{name: "truncated", in: mustMarshal(tb, envoyRequestBody(40))[:20]},
		{name: "length past the end", in: append(protowire.AppendTag(nil, 4, protowire.BytesType), 50, 1)},
		{name: "field number zero", in: []byte{0x02, 0x00}},
		{name: "field number past the maximum", in: protowire.AppendBytes(protowire.AppendVarint(nil, uint64(protowire.MaxValidNumber+1)<<3|2), nil)},
	}
}

// readLikeTheCodec reads b as vtCodec.Unmarshal does.
func readLikeTheCodec(b []byte) (*extprocv3.ProcessingRequest, bool, error) {
	m := &extprocv3.ProcessingRequest{}
	if decodeProcessingRequest(bytes.Clone(b), m) {
		return m, true, nil
	}
	return m, false, proto.Unmarshal(b, m)
}

// agreeWithProto fails t unless reading b as the codec does gives what
// proto.Unmarshal gives: the same message or the same error.
func agreeWithProto(t *testing.T, b []byte) (fast bool) {
	t.Helper()
	want := &extprocv3.ProcessingRequest{}
	wantErr := proto.Unmarshal(b, want)
	got, fast, err := readLikeTheCodec(b)
	if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
		t.Fatalf("error %v, proto.Unmarshal's %v", err, wantErr)
	}
	if fast && wantErr != nil {
		t.Fatalf("fast path took what proto.Unmarshal refuses: %v", wantErr)
	}
	if wantErr == nil && !proto.Equal(got, want) {
		t.Fatalf("read %v, proto.Unmarshal read %v", got, want)
	}
	return fast
}

func TestDecodeProcessingRequestAgreesWithProto(t *testing.T) {
	for _, tc := range decodeCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			if fast := agreeWithProto(t, tc.in); fast != tc.fast {
				t.Errorf("fast path took it: %v, want %v", fast, tc.fast)
			}
		})
	}
}

func FuzzDecodeProcessingRequest(f *testing.F) {
	for _, tc := range decodeCases(f) {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, b []byte) { agreeWithProto(t, b) })
}

// TestCodecUnmarshalOwnsItsBytes: what the codec returns survives gRPC
// reusing its receive buffers, and appending to one field cannot write
// over another.
func TestCodecUnmarshalOwnsItsBytes(t *testing.T) {
	want := envoyRequestHeaders(t)
	in := mustMarshal(t, want)
	var data mem.BufferSlice // in pieces, as gRPC may receive it
	for i := 0; i < len(in); i += 100 {
		data = append(data, mem.SliceBuffer(bytes.Clone(in[i:min(i+100, len(in))])))
	}
	got := &extprocv3.ProcessingRequest{}
	if err := newVTCodec().Unmarshal(data, got); err != nil {
		t.Fatal(err)
	}
	for _, b := range data {
		clear(b.ReadOnlyData())
	}
	hs := got.GetRequestHeaders().GetHeaders().GetHeaders()
	_ = append(hs[0].RawValue, bytes.Repeat([]byte("x"), 40)...)
	if !proto.Equal(got, want) {
		t.Errorf("read %v, want %v", got, want)
	}
}

// TestCodecUnmarshalsOtherMessagesAsProto: only ProcessingRequest takes
// the fast path; anything else is the default codec's.
func TestCodecUnmarshalsOtherMessagesAsProto(t *testing.T) {
	want := &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{RequestBody: &extprocv3.BodyResponse{}}}
	got := &extprocv3.ProcessingResponse{}
	if err := newVTCodec().Unmarshal(mem.BufferSlice{mem.SliceBuffer(mustMarshal(t, want))}, got); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, want) {
		t.Errorf("read %v, want %v", got, want)
	}
}

// BenchmarkUnmarshalProcessingRequest: Envoy's per-attempt request
// headers (12 headers, two attributes) and a 300-byte request body, read
// by proto.Unmarshal as the default codec does and by the fast path as
// vtCodec does, from a copy of the message it owns.
func BenchmarkUnmarshalProcessingRequest(b *testing.B) {
	for _, bc := range []struct {
		name string
		m    *extprocv3.ProcessingRequest
	}{{"headers", envoyRequestHeaders(b)}, {"body", envoyRequestBody(300)}} {
		in := mustMarshal(b, bc.m)
		b.Run(bc.name+"/proto", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := proto.Unmarshal(in, &extprocv3.ProcessingRequest{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bc.name+"/fast", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !decodeProcessingRequest(bytes.Clone(in), &extprocv3.ProcessingRequest{}) {
					b.Fatal("left to proto.Unmarshal")
				}
			}
		})
	}
}
