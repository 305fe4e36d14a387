package server

import (
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/switchyard/switchyard/envoy/contract"
)

// annotate puts the request's accounting on the last message ext_proc
// sends for it (the end of the response, or a refusal), when the figures
// are final; Envoy writes its access log after that message.
func annotate(resp *extprocv3.ProcessingResponse, lv *live) {
	if lv == nil || (!lv.complete && resp.GetImmediateResponse() == nil) {
		return
	}
	x := lv.x
	f := map[string]*structpb.Value{
		"tenant":          structpb.NewStringValue(""),
		"app":             structpb.NewStringValue(x.Caller.App),
		"key":             structpb.NewStringValue(x.Caller.KeyName),
		"route":           structpb.NewStringValue(x.Route.Name),
		"requested_model": structpb.NewStringValue(x.RequestedModel()),
		"model":           structpb.NewStringValue(""),
		"provider":        structpb.NewStringValue(""),
		"attempts":        structpb.NewNumberValue(float64(x.AttemptCount())),
		"input_tokens":    structpb.NewNumberValue(float64(x.Usage.PromptTokens)),
		"output_tokens":   structpb.NewNumberValue(float64(x.Usage.CompletionTokens)),
		"cached_tokens":   structpb.NewNumberValue(float64(x.Usage.CachedTokens)),
		"cost_micro_usd":  structpb.NewNumberValue(float64(x.Usage.CostMicros)),
		"usage_estimated": structpb.NewBoolValue(x.Usage.Estimated),
	}
	if x.Caller.Tenant != nil {
		f["tenant"] = structpb.NewStringValue(x.Caller.Tenant.Name)
	}
	if a := x.LastAttempt(); a != nil {
		f["model"] = structpb.NewStringValue(a.Target.Model.Name)
		f["provider"] = structpb.NewStringValue(a.Target.Provider().Name)
	}
	if resp.DynamicMetadata == nil {
		resp.DynamicMetadata = &structpb.Struct{Fields: map[string]*structpb.Value{}}
	}
	resp.DynamicMetadata.Fields[contract.AccessLogMetadataNamespace] = structpb.NewStructValue(&structpb.Struct{Fields: f})
}
