-- What an answer of the response cache saved: what the provider charged
-- for it when it was made (0 for every other row).
ALTER TABLE usage_records ADD COLUMN saved_micro_usd INTEGER NOT NULL DEFAULT 0;
