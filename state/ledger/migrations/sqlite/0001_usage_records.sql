-- One row per request. Times are Unix microseconds (UTC) and booleans 0 or 1,
-- in a STRICT table so that SQLite holds the types PostgreSQL would. Text
-- columns are never NULL so that grouping and filtering treat "none" as the
-- empty string on both engines.
CREATE TABLE usage_records (
    request_id       TEXT    PRIMARY KEY NOT NULL,
    occurred_at      INTEGER NOT NULL,
    tenant           TEXT    NOT NULL DEFAULT '',
    app              TEXT    NOT NULL DEFAULT '',
    key_name         TEXT    NOT NULL DEFAULT '',
    route            TEXT    NOT NULL DEFAULT '',
    requested_model  TEXT    NOT NULL DEFAULT '',
    served_model     TEXT    NOT NULL DEFAULT '',
    provider         TEXT    NOT NULL DEFAULT '',
    -- served_model, or requested_model when no attempt was made
    model            TEXT    NOT NULL DEFAULT '',
    stream           INTEGER NOT NULL DEFAULT 0,
    attempts         INTEGER NOT NULL DEFAULT 0,
    -- a JSON array of strings
    fallback_reasons TEXT    NOT NULL DEFAULT '[]',
    input_tokens     INTEGER NOT NULL DEFAULT 0,
    output_tokens    INTEGER NOT NULL DEFAULT 0,
    cached_tokens    INTEGER NOT NULL DEFAULT 0,
    cost_micro_usd   INTEGER NOT NULL DEFAULT 0,
    latency_us       INTEGER NOT NULL DEFAULT 0,
    ttft_us          INTEGER NOT NULL DEFAULT 0,
    status           INTEGER NOT NULL DEFAULT 0,
    error_type       TEXT    NOT NULL DEFAULT '',
    cache_hit        INTEGER NOT NULL DEFAULT 0,
    -- when the row reached the database; later than occurred_at by the
    -- batching delay, or by an outage
    recorded_at      INTEGER NOT NULL DEFAULT (CAST(unixepoch('subsec') * 1000000 AS INTEGER))
) STRICT;
