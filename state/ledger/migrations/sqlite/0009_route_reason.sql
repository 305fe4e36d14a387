-- Why the router chose each request's plan, as X-Switchyard-Route-Reason
-- says (empty when no plan was made), for a request's page in the console.
ALTER TABLE usage_records ADD COLUMN route_reason TEXT NOT NULL DEFAULT '';
