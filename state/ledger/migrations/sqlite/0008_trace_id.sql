-- The request's OpenTelemetry trace ID (32 hex digits), empty when tracing
-- was off: a ledger row leads to the request's trace.
ALTER TABLE usage_records ADD COLUMN trace_id TEXT NOT NULL DEFAULT '';
