package tracing

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/filters/filterspec"
)

// The gateway's own attributes and events, under switchyard.*; the
// model's facts use the GenAI semantic conventions' names (genai.go).
const (
	attrTenant        = attribute.Key("switchyard.tenant")
	attrApp           = attribute.Key("switchyard.app")
	attrKeyName       = attribute.Key("switchyard.key_name")
	attrRoute         = attribute.Key("switchyard.route")
	attrRequestID     = attribute.Key("switchyard.request_id")
	attrCost          = attribute.Key("switchyard.cost_micro_usd")
	attrFallbacks     = attribute.Key("switchyard.fallback_count")
	attrCacheHit      = attribute.Key("switchyard.cache_hit")
	attrCacheHow      = attribute.Key("switchyard.cache")
	attrRouteReason   = attribute.Key("switchyard.route_reason")
	attrPlan          = attribute.Key("switchyard.plan")
	attrPhase         = attribute.Key("switchyard.phase")
	attrAttempt       = attribute.Key("switchyard.attempt")
	attrProvider      = attribute.Key("switchyard.provider")
	attrModel         = attribute.Key("switchyard.model")
	attrTranslation   = attribute.Key("switchyard.translation")
	attrBlame         = attribute.Key("switchyard.blame")
	attrEstimated     = attribute.Key("switchyard.usage_estimated")
	attrStatus        = attribute.Key("http.response.status_code")
	attrErrorType     = attribute.Key("error.type")
	attrTTFT          = attribute.Key("switchyard.ttft_ms")
	attrHedgeAfter    = attribute.Key("switchyard.hedge.after_ms")
	attrHedgeCost     = attribute.Key("switchyard.hedge.cost_micro_usd")
	attrHedge         = attribute.Key("switchyard.hedge")
	eventFirstToken   = "switchyard.first_token"
	attrServerAddress = attribute.Key("server.address")
	attrServerPort    = attribute.Key("server.port")
)

// spanCount is how many spans build makes of x: the request's, one per
// hook run, one per attempt.
func spanCount(x *filters.Exchange) int {
	return 1 + len(x.Trace.Steps()) + len(x.Attempts())
}

// build makes the spans of one kept request, with the times things
// happened, and ends them (the SDK hands each to the batch processor).
func build(tr trace.Tracer, j job) {
	x := j.x
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), x.Trace.Parent)
	op := operation(x)
	attrs := append(requestAttributes(x, j.cause, op), x.Trace.Notes()...)
	// The request span takes the ID drawn when the request arrived; its
	// children draw their own.
	_, req := tr.Start(withSpanID(ctx, x.Trace.Span.SpanID()), "switchyard "+routeName(x),
		trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(x.Started), trace.WithAttributes(attrs...))
	ctx = trace.ContextWithSpan(ctx, req)
	if !x.Sent.FirstToken.IsZero() {
		req.AddEvent(eventFirstToken, trace.WithTimestamp(x.Sent.FirstToken),
			trace.WithAttributes(attrTTFT.Int64(x.Sent.FirstToken.Sub(x.Started).Milliseconds())))
	}
	if st := status(x, j.cause); st >= http.StatusInternalServerError || x.Sent.ErrorType != "" {
		req.SetStatus(codes.Error, errorText(x, j.cause))
	}
	steps := x.Trace.Steps()
	attempts := x.Attempts()
	for _, s := range steps {
		if s.Phase != filterspec.PhaseAttempt {
			step(ctx, tr, x, s)
		}
	}
	answering := x.LastAttempt()
	for _, a := range attempts {
		last := a == answering
		end := attemptEnd(a, last, j.end)
		actx, span := tr.Start(ctx, op+" "+a.Target.Model.Upstream, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithTimestamp(a.Started), trace.WithAttributes(attemptAttributes(x, a, op, last)...))
		for _, s := range steps {
			if s.Phase == filterspec.PhaseAttempt && s.Attempt == a.N {
				step(actx, tr, x, s)
			}
		}
		o := a.Outcome()
		switch {
		case o.Cause == filters.CauseHedged:
			// Cancelled by design when another attempt answered first.
			span.SetAttributes(attrHedge.String("lost"))
		case o.Failed() || (!last && o.Status >= http.StatusBadRequest):
			span.SetStatus(codes.Error, failure(o))
			span.SetAttributes(attrErrorType.String(errorType(o)), attrBlame.String(blame(o, j.cause)))
		case last:
			if x.Hedge != nil {
				span.SetAttributes(attrHedge.String("won"))
			}
			served(span, x, a)
			if j.content > 0 {
				content(span, x, j.content, end)
			}
		}
		span.End(trace.WithTimestamp(end))
	}
	if len(attempts) == 0 && j.content > 0 {
		content(req, x, j.content, j.end)
	}
	req.End(trace.WithTimestamp(j.end))
}

// step is the span of one hook's run, with what its filter decided.
func step(ctx context.Context, tr trace.Tracer, x *filters.Exchange, s filters.Step) {
	attrs := append([]attribute.KeyValue{attrPhase.String(s.Phase.String())}, s.Notes...)
	switch s.Filter {
	case "auth":
		attrs = append(attrs, caller(x)...)
	case "router":
		if s.Phase != filterspec.PhaseAttempt {
			attrs = append(attrs, attrRouteReason.String(x.RouteReason), attrPlan.StringSlice(plan(x)))
		}
	case "cache":
		attrs = append(attrs, attrCacheHit.Bool(x.Cached.How == "hit"))
	}
	_, span := tr.Start(ctx, "switchyard."+s.Filter, trace.WithTimestamp(s.Start), trace.WithAttributes(attrs...))
	if s.Err != nil {
		span.SetStatus(codes.Error, filters.AsError(s.Err, x.ID).Message)
	}
	span.End(trace.WithTimestamp(s.End))
}

// requestAttributes are the request span's: who called, which route, what
// it cost and how it was served.
func requestAttributes(x *filters.Exchange, cause error, op string) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		attrRequestID.String(x.ID), attrRoute.String(routeName(x)),
		genaiOperation.String(op), attrStatus.Int(status(x, cause)),
		attrCost.Int64(x.Usage.CostMicros), attrFallbacks.Int(max(0, x.AttemptCount()-1)),
		attrCacheHit.Bool(x.Cached.How == "hit"),
	}
	attrs = append(attrs, caller(x)...)
	if m := x.RequestedModel(); m != "" {
		attrs = append(attrs, genaiRequestModel.String(m))
	}
	if x.Cached.How != "" {
		attrs = append(attrs, attrCacheHow.String(x.Cached.How))
	}
	if x.RouteReason != "" {
		attrs = append(attrs, attrRouteReason.String(x.RouteReason))
	}
	if x.Usage.Known {
		attrs = append(attrs, usage(x)...)
	}
	if x.Hedge != nil {
		attrs = append(attrs, attrHedgeAfter.Int64(x.Hedge.After.Milliseconds()), attrHedgeCost.Int64(x.Usage.HedgedMicros))
	}
	return attrs
}

// attemptAttributes are an attempt span's: the GenAI inference call to
// its provider, and the translation that made it.
func attemptAttributes(x *filters.Exchange, a *filters.Attempt, op string, last bool) []attribute.KeyValue {
	p := a.Target.Provider()
	attrs := []attribute.KeyValue{
		genaiOperation.String(op), genaiProvider.String(providerName(p)), genaiRequestModel.String(a.Target.Model.Upstream),
		attrAttempt.Int(a.N), attrProvider.String(p.Name), attrModel.String(a.Target.Model.Name),
		attrTranslation.String(clientAPI(x) + "→" + string(p.Kind)),
		attrServerAddress.String(p.Host), attrServerPort.Int(p.Port),
	}
	if o := a.Outcome(); o.Status != 0 {
		attrs = append(attrs, attrStatus.Int(o.Status))
	}
	if c := x.Chat; c != nil {
		attrs = append(attrs, genaiStream.Bool(c.Stream))
		if n := c.MaxCompletionTokens; n != nil {
			attrs = append(attrs, genaiMaxTokens.Int(*n))
		} else if n := c.MaxTokens; n != nil {
			attrs = append(attrs, genaiMaxTokens.Int(*n))
		}
		if v := c.Temperature; v != nil {
			attrs = append(attrs, genaiTemperature.Float64(*v))
		}
		if v := c.TopP; v != nil {
			attrs = append(attrs, genaiTopP.Float64(*v))
		}
		if n := c.N; n != nil && *n != 1 {
			attrs = append(attrs, genaiChoiceCount.Int(*n))
		}
	}
	return attrs
}

// served adds to the answering attempt's span what the answer said: the
// response's model, ID and finish reasons, its tokens and the time to its
// first token.
func served(span trace.Span, x *filters.Exchange, a *filters.Attempt) {
	r := x.Trace.Response
	if r.Model != "" {
		span.SetAttributes(genaiResponseModel.String(r.Model))
	}
	if r.ID != "" {
		span.SetAttributes(genaiResponseID.String(r.ID))
	}
	if len(r.FinishReasons) > 0 {
		span.SetAttributes(genaiFinishReasons.StringSlice(r.FinishReasons))
	}
	if x.Usage.Known {
		span.SetAttributes(usage(x)...)
	}
	if ft := x.Sent.FirstToken; !ft.IsZero() {
		sent := a.SentAt()
		if sent.IsZero() {
			sent = a.Started
		}
		span.SetAttributes(genaiTimeToFirstChunk.Float64(ft.Sub(sent).Seconds()))
		span.AddEvent(eventFirstToken, trace.WithTimestamp(ft), trace.WithAttributes(attrTTFT.Int64(ft.Sub(x.Started).Milliseconds())))
	}
}

func usage(x *filters.Exchange) []attribute.KeyValue {
	attrs := []attribute.KeyValue{genaiInputTokens.Int(x.Usage.PromptTokens), genaiOutputTokens.Int(x.Usage.CompletionTokens)}
	if x.Usage.CachedTokens > 0 {
		attrs = append(attrs, genaiCacheReadTokens.Int(x.Usage.CachedTokens))
	}
	if x.Usage.Estimated {
		attrs = append(attrs, attrEstimated.Bool(true))
	}
	return attrs
}

// caller names who called: never the key, only its name.
func caller(x *filters.Exchange) []attribute.KeyValue {
	if x.Caller.Tenant == nil {
		return nil
	}
	return []attribute.KeyValue{attrTenant.String(x.Caller.Tenant.Name), attrApp.String(x.Caller.App), attrKeyName.String(x.Caller.KeyName)}
}

func plan(x *filters.Exchange) []string {
	out := make([]string, len(x.Plan))
	for i, t := range x.Plan {
		out[i] = t.Model.Name
	}
	return out
}

func routeName(x *filters.Exchange) string {
	if x.Route == nil {
		return ""
	}
	return x.Route.Name
}

// attemptEnd is when an attempt ended: the last one with the request (its
// answer streamed until then), a failed one when its outcome came.
func attemptEnd(a *filters.Attempt, last bool, end time.Time) time.Time {
	o := a.Outcome()
	if last && !o.Failed() {
		return end
	}
	began := a.SentAt()
	if began.IsZero() {
		began = a.Started
	}
	if o.Latency > 0 {
		return began.Add(o.Latency)
	}
	return began
}

// blame says whose doing a failed attempt was: the provider's (an error
// status, a refused connection, a timeout), the client's (it left) or the
// gateway's (it gave up on the attempt).
func blame(o filters.Outcome, cause error) string {
	switch {
	case o.Status >= http.StatusInternalServerError || o.Status == http.StatusTooManyRequests:
		return "provider"
	case o.Status >= http.StatusBadRequest:
		return "client"
	case o.Cause == filters.CauseConnect || o.Cause == filters.CauseTimeout:
		return "provider"
	case errors.Is(cause, filters.ErrClientGone):
		return "client"
	}
	return "gateway"
}

// errorType is the semantic conventions' error.type of a failed attempt:
// its status, or what happened instead.
func errorType(o filters.Outcome) string {
	switch {
	case o.Status != 0:
		return strconv.Itoa(o.Status)
	case o.Cause == filters.CauseTimeout:
		return "timeout"
	case o.Cause == filters.CauseConnect:
		return "connect"
	}
	return "cancelled"
}

func failure(o filters.Outcome) string {
	if o.Status != 0 {
		return "the provider answered " + strconv.Itoa(o.Status)
	}
	return o.Failure
}

// errorText is the request span's status message: the refusal the client
// got, or the stream's error event.
func errorText(x *filters.Exchange, cause error) string {
	if cause != nil {
		return filters.AsError(cause, x.ID).Message
	}
	if x.Sent.ErrorType != "" {
		return "the stream ended with an error event: " + x.Sent.ErrorType
	}
	return http.StatusText(x.Response.Status)
}

// clientAPI names the protocol the client spoke.
func clientAPI(x *filters.Exchange) string {
	if x.Route == nil {
		return ""
	}
	switch x.Route.API {
	case policy.APIMessages, policy.APICountTokens:
		return "anthropic"
	case policy.APIResponses:
		return "openai_responses"
	}
	return "openai"
}
