-- What an auto-routed request would have cost on the route's strongest
-- model (0 when the client named the model), and the ratings apps give
-- their answers (POST /v1/feedback): one per request, the last one kept.
ALTER TABLE usage_records ADD COLUMN strong_cost_micro_usd BIGINT NOT NULL DEFAULT 0;
CREATE TABLE feedback (
    request_id TEXT             PRIMARY KEY,
    -- 0 (useless) .. 1 (perfect); thumbs are 0 and 1
    score      DOUBLE PRECISION NOT NULL,
    rated_at   TIMESTAMPTZ      NOT NULL
);
