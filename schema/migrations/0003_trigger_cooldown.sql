-- Vestigial: nothing reads or writes cooldown_ms, but shipped databases carry it.
ALTER TABLE agent_triggers ADD COLUMN cooldown_ms INTEGER;
