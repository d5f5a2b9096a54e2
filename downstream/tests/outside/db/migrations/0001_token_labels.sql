ALTER TABLE api_tokens ADD COLUMN label TEXT;
