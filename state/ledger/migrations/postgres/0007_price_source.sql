-- Where the price a row was charged at comes from: catalog (the model's
-- own), pattern (a model only a pattern served, at its stated worst case)
-- or estimated (at the dearest catalog price the pattern matched); empty
-- when no provider answered, and on rows older than this step.
ALTER TABLE usage_records ADD COLUMN price_source TEXT NOT NULL DEFAULT '';
