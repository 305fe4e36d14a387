package usagereport

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/filters/filterspec"
	"github.com/switchyard/switchyard/state/ledger"
	"github.com/switchyard/switchyard/state/ledger/report"
	"github.com/switchyard/switchyard/state/priors"
)

func init() { filters.Register("usage_report", New) }

// tenantViews are the groupings a tenant may ask for, by the path below
// the route's own.
var tenantViews = map[string][]ledger.Dimension{
	"":           nil,
	"by-app":     {ledger.ByApp},
	"by-model":   {ledger.ByModel},
	"by-key":     {ledger.ByKey},
	"by-session": {ledger.BySession},
}

// qualityView is the delivered quality and the savings of auto routing,
// per route and served model, and what learning routes learnt of the
// tenant's domains.
const qualityView = "quality"

// tagView groups by the values of the tag its key parameter names.
const tagView = "by-tag"

// Filter serves a tenant its own usage.
type Filter struct {
	src   report.Source
	learn *priors.Learner // nil: no route learns domain priors
}

// qualityAnswer is GET /v1/usage/quality: the ledger's figures, and the
// domains of the caller's tenant as the learning routes know them now
// (recent counts, whatever the time range; narrowed by app).
type qualityAnswer struct {
	*report.QualityReport
	Domains []priors.DomainReport `json:"domains"`
}

// New builds the usage_report filter; it takes no arguments.
func New(ref policy.FilterRef, deps filters.Deps) (filters.Filter, error) {
	if err := filterspec.NoArgs(ref); err != nil {
		return nil, err
	}
	return &Filter{src: report.Source{Writer: deps.Ledger, Ledger: deps.Usage}, learn: deps.Priors}, nil
}

// Name implements [filters.Filter].
func (*Filter) Name() string { return "usage_report" }

// RequestHeaders implements [filters.RequestHeadersHook]: the caller's
// tenant is the report's, whatever the query says.
func (f *Filter) RequestHeaders(ctx context.Context, x *filters.Exchange) error {
	if x.Method != http.MethodGet {
		return filters.Reject(http.StatusMethodNotAllowed, openaiapi.TypeInvalidRequest, "method_not_allowed", "use GET on %s", x.Route.Path)
	}
	view := strings.TrimPrefix(strings.TrimPrefix(x.Path, x.Route.Path), "/")
	by, ok := tenantViews[view]
	if !ok && view != qualityView && view != tagView {
		p := x.Route.Path
		return filters.Reject(http.StatusNotFound, openaiapi.TypeInvalidRequest, "unknown_url",
			"no usage view %q; use %s, %s/by-app, %s/by-model, %s/by-key, %s/by-tag?key=, %s/by-session or %s/quality", view, p, p, p, p, p, p, p)
	}
	if x.Caller.Tenant == nil {
		return filters.Reject(http.StatusUnauthorized, openaiapi.TypeInvalidRequest, "missing_api_key", "the usage API needs your API key")
	}
	var (
		q   ledger.Filter
		err error
	)
	if view == tagView {
		var key string
		q, key, err = report.ParseTagQuery(x.Query)
		by = []ledger.Dimension{ledger.ByTag(key)}
	} else {
		q, err = report.ParseQuery(x.Query)
	}
	if err != nil {
		return err
	}
	own := x.Caller.Tenant.Name
	if q.Tenant != "" && q.Tenant != own {
		return filters.Reject(http.StatusForbidden, openaiapi.TypePermission, "tenant_not_allowed",
			"your key reads only its own tenant's usage").WithParam("tenant")
	}
	q.Tenant = own
	var rep any
	if view == qualityView {
		rep, err = f.quality(ctx, q)
	} else {
		rep, err = f.src.Report(ctx, q, by...)
	}
	if err != nil {
		return err
	}
	body, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	x.Respond(http.StatusOK, body)
	return nil
}

func (f *Filter) quality(ctx context.Context, q ledger.Filter) (*qualityAnswer, error) {
	rep, err := f.src.Quality(ctx, q)
	if err != nil {
		return nil, err
	}
	a := &qualityAnswer{QualityReport: rep, Domains: []priors.DomainReport{}}
	if f.learn != nil {
		for _, d := range f.learn.Report("", q.Tenant) {
			if q.App == "" || d.App == q.App {
				a.Domains = append(a.Domains, d)
			}
		}
	}
	return a, nil
}

var _ filters.RequestHeadersHook = (*Filter)(nil)
