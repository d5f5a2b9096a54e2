-- The parent's delegate call that spawned a run, readable without decoding input_cbor.
ALTER TABLE runs ADD COLUMN parent_tool_call_id TEXT;
