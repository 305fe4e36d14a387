package console

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/switchyard/switchyard/manage"
)

// change answers a signed-in POST whose CSRF token checked out: each
// change goes through package manage, as the admin API's do, and is
// audited with the session that made it.
func (f *Filter) change(ctx context.Context, c *call) (int, []byte) {
	switch c.sub {
	case "logout":
		return f.signOut(ctx, c)
	case "keys/issue":
		req := manage.KeyRequest{Tenant: c.form.Get("tenant"), Name: c.form.Get("name"), App: c.form.Get("app")}
		k, err := manage.IssueKey(ctx, f.store, c.x.Policy, req)
		if err != nil {
			return f.keysAfter(ctx, c, nil, err, "")
		}
		f.audit(ctx, c, "key.issue", slog.String("tenant", k.Tenant), slog.String("name", k.Name),
			slog.String("app", k.App), slog.String("hash_prefix", k.HashPrefix))
		return f.keysAfter(ctx, c, &k, nil, "Key "+k.Name+" of tenant "+k.Tenant+" issued.")
	case "keys/rotate":
		k, revoked, err := manage.RotateKey(ctx, f.store, c.x.Policy, c.form.Get("tenant"), c.form.Get("name"))
		if err != nil {
			return f.keysAfter(ctx, c, nil, err, "")
		}
		f.audit(ctx, c, "key.rotate", slog.String("tenant", k.Tenant), slog.String("name", k.Name),
			slog.String("hash_prefix", k.HashPrefix), slog.String("revoked_hash_prefix", revoked))
		return f.keysAfter(ctx, c, &k, nil, "Key "+k.Name+" of tenant "+k.Tenant+" rotated: the old secret ("+revoked+"…) is refused from now on.")
	case "keys/revoke":
		k, err := manage.RevokeKey(ctx, f.store, c.x.Policy, c.form.Get("tenant"), c.form.Get("name"))
		if err != nil {
			return f.keysAfter(ctx, c, nil, err, "")
		}
		f.audit(ctx, c, "key.revoke", slog.String("tenant", k.Tenant), slog.String("name", k.Name),
			slog.String("hash_prefix", k.HashPrefix))
		return f.keysAfter(ctx, c, nil, nil, "Key "+k.Name+" of tenant "+k.Tenant+" revoked: it is refused from now on.")
	case "providers/drill":
		provider, down := c.form.Get("provider"), c.form.Get("state") == "down"
		if s := c.form.Get("state"); s != "down" && s != "up" {
			return f.problem(c, http.StatusBadRequest, "A drill brings a provider down or up; the form said "+clip(s)+".")
		}
		msg := ""
		err := manage.SetDrill(ctx, c.x.Policy, f.store, f.health, provider, down)
		if err == nil {
			action := "fault.up"
			msg = "Drill over: " + provider + " is routed again as its health allows."
			if down {
				action = "fault.down"
				msg = "Drill on: routing treats " + provider + " as down, on every replica, until you bring it up."
			}
			f.audit(ctx, c, action, slog.String("provider", provider))
		}
		return f.after(ctx, c, "providers", f.providers, err, msg)
	}
	return f.problem(c, http.StatusNotFound, "The console has no action "+c.x.Path+".")
}

// keysAfter answers a key change with the Tenants and keys page: the
// outcome on top and, for a key just made, its secret, this once.
func (f *Filter) keysAfter(ctx context.Context, c *call, issued *manage.Key, err error, msg string) (int, []byte) {
	return f.after(ctx, c, "tenants", func(ctx context.Context, c *call) (any, error) {
		d, err := f.tenants(ctx, c)
		if err == nil {
			d.(*tenantsView).Issued = issued
		}
		return d, err
	}, err, msg)
}

// after answers a change with the page of tab nav, and the change's
// outcome: msg, or the refusal of err.
func (f *Filter) after(ctx context.Context, c *call, nav string, load loader, err error, msg string) (int, []byte) {
	status, v := http.StatusOK, &view{Nav: nav, Flash: msg, Live: "/console/" + nav}
	if err != nil {
		status, v.Error = f.refusal(c, err)
		v.Flash = ""
	}
	data, lerr := load(ctx, c)
	if lerr != nil {
		return f.fail(c, lerr)
	}
	v.Data = data
	return f.renderView(c, status, nav, v)
}
