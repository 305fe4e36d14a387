package server

import (
	"sync"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/switchyard/switchyard/envoy/contract"
)

// accessLog is the accounting of one request for Envoy's access log, as
// protobuf values, reused once the message carrying it is sent: built
// value by value it was 27 allocations a request, and 1.7 KB in one
// request's last reply, for a message marshalled and dropped at once.
type accessLog struct {
	vals   [13]structpb.Value
	strs   [7]structpb.Value_StringValue
	nums   [5]structpb.Value_NumberValue
	yesNo  structpb.Value_BoolValue
	fields map[string]*structpb.Value
	inner  structpb.Struct
	kind   structpb.Value_StructValue
	value  structpb.Value
	// outer is the message's metadata when it had none of its own.
	outer structpb.Struct
}

var accessLogs = sync.Pool{New: func() any {
	return &accessLog{fields: make(map[string]*structpb.Value, 13)}
}}

// release gives a back once the message it annotated is sent (gRPC has
// marshalled it; nothing holds it after). Nil does nothing.
func (a *accessLog) release() {
	if a == nil {
		return
	}
	clear(a.fields)
	a.outer.Fields = nil
	accessLogs.Put(a)
}

// annotate puts the request's accounting on the last message ext_proc
// sends for it (the end of the response, or a refusal), when the figures
// are final; Envoy writes its access log after that message. The caller
// releases what it returns once resp is sent.
func annotate(resp *extprocv3.ProcessingResponse, lv *live) *accessLog {
	if lv == nil || (!lv.complete && resp.GetImmediateResponse() == nil) {
		return nil
	}
	x := lv.x
	tenant, model, provider := "", "", ""
	if x.Caller.Tenant != nil {
		tenant = x.Caller.Tenant.Name
	}
	if a := x.LastAttempt(); a != nil {
		model, provider = a.Target.Model.Name, a.Target.Provider().Name
	}
	a := accessLogs.Get().(*accessLog)
	n, ns, nn := 0, 0, 0
	str := func(k, v string) {
		a.strs[ns].StringValue = v
		a.vals[n].Kind = &a.strs[ns]
		a.fields[k] = &a.vals[n]
		n, ns = n+1, ns+1
	}
	num := func(k string, v float64) {
		a.nums[nn].NumberValue = v
		a.vals[n].Kind = &a.nums[nn]
		a.fields[k] = &a.vals[n]
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
	a.yesNo.BoolValue = x.Usage.Estimated
	a.vals[n].Kind = &a.yesNo
	a.fields["usage_estimated"] = &a.vals[n]
	a.inner.Fields = a.fields
	a.kind.StructValue = &a.inner
	a.value.Kind = &a.kind
	if resp.DynamicMetadata == nil {
		a.outer.Fields = map[string]*structpb.Value{}
		resp.DynamicMetadata = &a.outer
	}
	resp.DynamicMetadata.Fields[contract.AccessLogMetadataNamespace] = &a.value
	return a
}
