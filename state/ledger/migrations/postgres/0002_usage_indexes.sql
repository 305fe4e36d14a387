-- The usage queries filter by a time range, optionally narrowed to a tenant
-- (and app) or a model, and group by those columns.
CREATE INDEX usage_records_time ON usage_records (occurred_at);
CREATE INDEX usage_records_tenant_app_time ON usage_records (tenant, app, occurred_at);
CREATE INDEX usage_records_model_time ON usage_records (model, occurred_at);
