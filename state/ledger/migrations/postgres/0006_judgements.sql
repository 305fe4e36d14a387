-- The judge filter's verdicts on auto routing's weaker answers, apart
-- from the apps' ratings: one per request, the last one kept.
CREATE TABLE judgements (
    request_id TEXT             PRIMARY KEY,
    -- 0 (Rating: 1) .. 1 (Rating: 10)
    score      DOUBLE PRECISION NOT NULL,
    rated_at   TIMESTAMPTZ      NOT NULL
);
