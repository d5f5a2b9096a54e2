-- What a firing does; NULL keeps the old behaviour (start a new thread).
ALTER TABLE agent_triggers ADD COLUMN continuation_cbor BLOB;
