-- A trigger retired by combination points at its survivor.
ALTER TABLE agent_triggers ADD COLUMN merged_into TEXT REFERENCES agent_triggers (id);
