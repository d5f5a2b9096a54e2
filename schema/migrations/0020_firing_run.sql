-- The headless run a tool or script continuation started (no foreign key).
ALTER TABLE trigger_firings ADD COLUMN run_id TEXT;
