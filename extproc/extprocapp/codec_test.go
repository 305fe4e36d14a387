package extprocapp

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// TestVTCodecMarshalsWhatProtoDoes: a reply marshalled by the codec reads
// back as the message it was, whichever marshaller the build has.
func TestVTCodecMarshalsWhatProtoDoes(t *testing.T) {
	md, err := structpb.NewStruct(map[string]any{"switchyard.route": map[string]any{"priority_groups": []any{map[string]any{"name": "openai"}}}})
	if err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 64<<10) // past gRPC's buffer-pooling threshold
	for name, m := range map[string]*extprocv3.ProcessingResponse{
		"small": {Response: &extprocv3.ProcessingResponse_RequestBody{RequestBody: &extprocv3.BodyResponse{Response: &extprocv3.CommonResponse{
			HeaderMutation:  &extprocv3.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{{Header: &corev3.HeaderValue{Key: ":path", RawValue: []byte("/v1/messages")}}}, RemoveHeaders: []string{"cookie"}},
			BodyMutation:    &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_Body{Body: []byte(`{"model":"x"}`)}},
			ClearRouteCache: true,
		}}}, DynamicMetadata: md},
		"large": {Response: &extprocv3.ProcessingResponse_ResponseBody{ResponseBody: &extprocv3.BodyResponse{Response: &extprocv3.CommonResponse{
			BodyMutation: &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_Body{Body: big}},
		}}}},
	} {
		t.Run(name, func(t *testing.T) {
			c := newVTCodec()
			data, err := c.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			defer data.Free()
			var got extprocv3.ProcessingResponse
			if err := proto.Unmarshal(data.Materialize(), &got); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(&got, m) {
				t.Errorf("read back %v, want %v", &got, m)
			}
		})
	}
}
