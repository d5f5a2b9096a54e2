-- The session's quick-switched provider and model.
ALTER TABLE sessions ADD COLUMN model_override_cbor BLOB;
