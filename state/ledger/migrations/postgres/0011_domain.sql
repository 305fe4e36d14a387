-- On a route that learns domain priors, the request's domain (the
-- fingerprint of its system prompt, 16 hex digits; empty elsewhere) and
-- its complexity score, so that an app's later rating of the answer
-- teaches that domain, weighed by the score.
ALTER TABLE usage_records ADD COLUMN domain TEXT NOT NULL DEFAULT '';
ALTER TABLE usage_records ADD COLUMN routing_score DOUBLE PRECISION NOT NULL DEFAULT 0;
