package resources

import (
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	pgv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/router/cluster_specifiers/priority_group/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/envoy/contract"
)

// Retry back-off between attempts: the next attempt goes to another
// provider, so there is nothing to wait for.
const (
	retryBaseInterval = 2 * time.Millisecond
	retryMaxInterval  = 20 * time.Millisecond
	routeIdleTimeout  = 5 * time.Minute
)

// retryOn is what counts as a failed attempt: anything before the first
// response byte that another provider could do better.
const retryOn = "5xx,reset,connect-failure,refused-stream,retriable-status-codes"

// route is the Envoy route of a policy route, found by the client's path.
func route(p *policy.Policy, r *policy.Route) *routev3.Route {
	match := &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: r.Path}}
	if r.API.Prefix() {
		match = &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_PathSeparatedPrefix{PathSeparatedPrefix: r.Path}}
	}
	return routeTo(p, r, r.Name, match)
}

// translatedRoute is the same route found by [contract.RouteHeader], for
// the request ext_proc rewrote to its first provider's path.
func translatedRoute(p *policy.Policy, r *policy.Route) *routev3.Route {
	return routeTo(p, r, r.Name+"/translated", &routev3.RouteMatch{
		PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"},
		Headers: []*routev3.HeaderMatcher{{
			Name:                 contract.RouteHeader,
			HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: r.Name}}},
		}},
	})
}

func routeTo(p *policy.Policy, r *policy.Route, name string, match *routev3.RouteMatch) *routev3.Route {
	rt := &routev3.Route{
		Name:  name,
		Match: match,
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{
			ClusterSpecifier: &routev3.RouteAction_InlineClusterSpecifierPlugin{InlineClusterSpecifierPlugin: &routev3.ClusterSpecifierPlugin{
				Extension: &corev3.TypedExtensionConfig{Name: "envoy.router.cluster_specifier_plugin.priority_group", TypedConfig: mustAny(priorityGroups(p, r))},
			}},
			// No whole-request timeout: it would cut long streams.
			Timeout:     dur(0),
			IdleTimeout: dur(routeIdleTimeout),
			RetryPolicy: &routev3.RetryPolicy{
				RetryOn:               retryOn,
				RetriableStatusCodes:  []uint32{429, 529},
				NumRetries:            wrapperspb.UInt32(uint32(r.Attempts - 1)),
				PerTryIdleTimeout:     dur(r.PerTryIdleTimeout),
				RetryBackOff:          &routev3.RetryPolicy_RetryBackOff{BaseInterval: dur(retryBaseInterval), MaxInterval: dur(retryMaxInterval)},
				RefreshClusterOnRetry: true,
			},
		}},
		RequestBodyBufferLimit: wrapperspb.UInt64(uint64(p.Gateway.MaxRequestBytes)),
		RequestHeadersToRemove: contract.RouteRemovedHeaders,
	}
	if r.Hedge != nil {
		rt.TypedPerFilterConfig = map[string]*anypb.Any{answeredByFilterName: mustAny(answeredByRoute())}
	}
	return rt
}

// priorityGroups has one group per provider, named after it, and on a
// route that hedges one per ordered pair of providers, holding the pair's
// composite cluster (hedgeClusters). ext_proc's dynamic metadata lists
// group names only, so it can reorder providers per request but never
// name a cluster the policy does not have.
func priorityGroups(p *policy.Policy, r *policy.Route) *pgv3.PriorityGroupClusterSpecifier {
	s := &pgv3.PriorityGroupClusterSpecifier{OverrideMetadataNamespace: contract.RouteMetadataNamespace}
	group := func(name, cluster string) {
		s.PriorityGroups = append(s.PriorityGroups, &pgv3.PriorityGroup{
			Name:     name,
			Clusters: []*pgv3.ClusterWeight{{ClusterName: cluster, Weight: wrapperspb.UInt32(1)}},
		})
	}
	for _, pr := range p.Providers {
		group(pr.Name, pr.Cluster)
	}
	if r.Hedge != nil {
		for _, a := range p.Providers {
			for _, b := range p.Providers {
				if a != b {
					group(contract.HedgeCluster(a.Name, b.Name), contract.HedgeCluster(a.Name, b.Name))
				}
			}
		}
	}
	return s
}

// notFoundRoute answers every other path without bothering ext_proc.
func notFoundRoute() *routev3.Route {
	body := `{"error":{"message":"unknown URL; this gateway serves the OpenAI API under /v1","type":"invalid_request_error","param":null,"code":"unknown_url"}}`
	return &routev3.Route{
		Name:  "not_found",
		Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
		Action: &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{
			Status: 404,
			Body:   &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: body}},
		}},
		ResponseHeadersToAdd: []*corev3.HeaderValueOption{{
			Header:       &corev3.HeaderValue{Key: "content-type", Value: "application/json"},
			AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
		}},
		TypedPerFilterConfig: map[string]*anypb.Any{
			extProcFilterName: mustAny(&extprocv3.ExtProcPerRoute{Override: &extprocv3.ExtProcPerRoute_Disabled{Disabled: true}}),
		},
	}
}
