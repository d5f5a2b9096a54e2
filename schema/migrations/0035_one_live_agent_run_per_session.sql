-- A session runs one model turn at a time: at most one of its agent runs is claimed or running.
-- The claim has always skipped a session with a live run; this index makes the database refuse a
-- second live agent run itself, so that claimers on several PostgreSQL nodes can each claim in
-- one statement, without a transaction: of two claiming runs of one session at once, the second
-- meets the index and claims again (and then passes the session over).
CREATE UNIQUE INDEX runs_live_agent_by_session ON runs (session_id)
    WHERE kind = 'agent' AND status IN ('claimed', 'running');
