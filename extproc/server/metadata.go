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
	tenant, model, provider := "", "", ""
	if x.Caller.Tenant != nil {
		tenant = x.Caller.Tenant.Name
	}
	if a := x.LastAttempt(); a != nil {
		model, provider = a.Target.Model.Name, a.Target.Provider().Name
	}
	// The values and their kinds are allocated together: one by one they
	// were 27 allocations a request.
	var (
		vals  [13]structpb.Value
		strs  [7]structpb.Value_StringValue
		nums  [5]structpb.Value_NumberValue
		yesNo structpb.Value_BoolValue
	)
	f := make(map[string]*structpb.Value, len(vals))
	n, ns, nn := 0, 0, 0
	str := func(k, v string) {
		strs[ns].StringValue = v
		vals[n].Kind = &strs[ns]
		f[k] = &vals[n]
		n, ns = n+1, ns+1
	}
	num := func(k string, v float64) {
		nums[nn].NumberValue = v
		vals[n].Kind = &nums[nn]
		f[k] = &vals[n]
		n, nn = n+1, nn+1
	}
	str("tenant", tenant)
	str("app", x.Caller.App)
	str("key", x.Caller.KeyName)
	str("route", x.Route.Name)
	str("requested_model", x.RequestedModel())
	str("model", model)
	str("provider", provider)
	num("attempts", float64(x.AttemptCount()))
	num("input_tokens", float64(x.Usage.PromptTokens))
	num("output_tokens", float64(x.Usage.CompletionTokens))
	num("cached_tokens", float64(x.Usage.CachedTokens))
	num("cost_micro_usd", float64(x.Usage.CostMicros))
	yesNo.BoolValue = x.Usage.Estimated
	vals[n].Kind = &yesNo
	f["usage_estimated"] = &vals[n]
	if resp.DynamicMetadata == nil {
		resp.DynamicMetadata = &structpb.Struct{Fields: map[string]*structpb.Value{}}
	}
	resp.DynamicMetadata.Fields[contract.AccessLogMetadataNamespace] = structpb.NewStructValue(&structpb.Struct{Fields: f})
}
