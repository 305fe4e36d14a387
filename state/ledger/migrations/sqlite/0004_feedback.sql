-- What an auto-routed request would have cost on the route's strongest
-- model (0 when the client named the model), and the ratings apps give
-- their answers (POST /v1/feedback): one per request, the last one kept.
ALTER TABLE usage_records ADD COLUMN strong_cost_micro_usd INTEGER NOT NULL DEFAULT 0;
CREATE TABLE feedback (
    request_id TEXT    PRIMARY KEY NOT NULL,
    -- 0 (useless) .. 1 (perfect); thumbs are 0 and 1
    score      REAL    NOT NULL,
    rated_at   INTEGER NOT NULL
) STRICT;
