-- Deleting a parent row makes SQLite look for the rows that still reference it, once per deleted
-- row; without an index on the referencing column each look is a scan of the whole child table.
-- These index the references to the rows the store deletes in bulk: a trigger's firings (runs),
-- a session (its firings), a trigger (its event claims and the triggers merged into it).
CREATE INDEX runs_by_trigger_firing ON runs (trigger_firing_id) WHERE trigger_firing_id IS NOT NULL;
CREATE INDEX trigger_firings_by_session ON trigger_firings (session_id) WHERE session_id IS NOT NULL;
CREATE INDEX trigger_event_claims_by_trigger ON trigger_event_claims (trigger_id);
CREATE INDEX agent_triggers_by_merged_into ON agent_triggers (merged_into) WHERE merged_into IS NOT NULL;
