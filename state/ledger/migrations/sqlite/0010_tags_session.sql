-- A request's billing tags and client session (x-switchyard-tags,
-- x-switchyard-session, a key's tags, the body's metadata where the route
-- takes it). usage_records keeps the tags whole, as a JSON object of
-- strings ('{}': none), so a row reads back as it was written;
-- usage_tags holds one row per tag, which the usage API groups and
-- filters by. A tag row is written only beside the record whose tags
-- hold it, so the two never disagree.
ALTER TABLE usage_records ADD COLUMN tags TEXT NOT NULL DEFAULT '{}';
ALTER TABLE usage_records ADD COLUMN session_id TEXT NOT NULL DEFAULT '';
CREATE TABLE usage_tags (
    request_id TEXT NOT NULL,
    tag_key    TEXT NOT NULL,
    tag_value  TEXT NOT NULL,
    PRIMARY KEY (request_id, tag_key)
) STRICT;
CREATE INDEX usage_tags_key_value ON usage_tags (tag_key, tag_value);
CREATE INDEX usage_records_session_time ON usage_records (session_id, occurred_at);
