package admin

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/manage"
)

// keyRoutes are the virtual-key API: issue, list, rotate and revoke keys
// at runtime ([manage.IssueKey] and the others).
func (f *Filter) keyRoutes() map[string]handler {
	return map[string]handler{
		"POST keys":          f.issueKey,
		"GET keys":           f.listKeys,
		"POST keys/*/rotate": f.rotateKey,
		"DELETE keys/*":      f.revokeKey,
	}
}

// issueKey answers POST /admin/keys: a new key whose secret is in this
// answer and nowhere else.
func (f *Filter) issueKey(ctx context.Context, x *filters.Exchange, _ string) (int, any, error) {
	var req manage.KeyRequest
	if err := decode(x, &req); err != nil {
		return 0, nil, err
	}
	k, err := manage.IssueKey(ctx, f.store, x.Policy, req)
	if err != nil {
		return 0, nil, err
	}
	f.audit(ctx, x, "key.issue", slog.String("tenant", k.Tenant), slog.String("name", k.Name),
		slog.String("app", k.App), slog.String("hash_prefix", k.HashPrefix))
	return http.StatusCreated, k, nil
}

// listKeys answers GET /admin/keys[?tenant=]: the keys of one tenant, or
// of all, from the policy and from the API, revoked ones included.
func (f *Filter) listKeys(ctx context.Context, x *filters.Exchange, _ string) (int, any, error) {
	tenant := tenantOf(x)
	keys, err := manage.ListKeys(ctx, f.store, x.Policy, tenant)
	if err != nil {
		return 0, nil, err
	}
	f.audit(ctx, x, "key.list", slog.String("tenant", tenant))
	return http.StatusOK, map[string]any{"object": "list", "data": keys}, nil
}

// rotateKey answers POST /admin/keys/{name}/rotate[?tenant=]: a new secret
// for the key, with the same tenant, app, models and limits; the old
// secret is refused from then on.
func (f *Filter) rotateKey(ctx context.Context, x *filters.Exchange, name string) (int, any, error) {
	k, revoked, err := manage.RotateKey(ctx, f.store, x.Policy, tenantOf(x), name)
	if err != nil {
		return 0, nil, err
	}
	f.audit(ctx, x, "key.rotate", slog.String("tenant", k.Tenant), slog.String("name", name),
		slog.String("hash_prefix", k.HashPrefix), slog.String("revoked_hash_prefix", revoked))
	return http.StatusOK, k, nil
}

// revokeKey answers DELETE /admin/keys/{name}[?tenant=]: the key is refused
// from now on, on every replica.
func (f *Filter) revokeKey(ctx context.Context, x *filters.Exchange, name string) (int, any, error) {
	k, err := manage.RevokeKey(ctx, f.store, x.Policy, tenantOf(x), name)
	if err != nil {
		return 0, nil, err
	}
	f.audit(ctx, x, "key.revoke", slog.String("tenant", k.Tenant), slog.String("name", name),
		slog.String("hash_prefix", k.HashPrefix))
	return http.StatusOK, map[string]any{"object": "virtual_key", "name": name, "tenant": k.Tenant, "revoked": true}, nil
}

// tenantOf is the ?tenant= of a key call, "" for none.
func tenantOf(x *filters.Exchange) string {
	q, _ := url.ParseQuery(x.Query)
	return q.Get("tenant")
}
