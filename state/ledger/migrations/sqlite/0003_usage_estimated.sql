-- Whether the token counts are the gateway's estimate rather than the
-- provider's: a stream the client cut short before the provider's count
-- arrived is billed from what it was sent.
ALTER TABLE usage_records ADD COLUMN usage_estimated INTEGER NOT NULL DEFAULT 0;
