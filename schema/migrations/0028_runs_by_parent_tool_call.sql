-- A delegate row finds its child while the child works.
CREATE INDEX runs_by_parent_tool_call ON runs (parent_run_id, parent_tool_call_id);
