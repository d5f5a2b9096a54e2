-- Activity admission claims, seeded from every existing activity firing
-- (schedule, webhook and run-completed firings dedupe on their own row).
CREATE TABLE trigger_event_claims (
    account_id TEXT NOT NULL REFERENCES accounts (id),
    trigger_id TEXT NOT NULL REFERENCES agent_triggers (id),
    activity_key TEXT NOT NULL,
    firing_id TEXT,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (account_id, trigger_id, activity_key)
) WITHOUT ROWID;

INSERT INTO trigger_event_claims (account_id, trigger_id, activity_key, firing_id, created_at)
SELECT account_id, trigger_id, activity_key, id, created_at
FROM trigger_firings
WHERE activity_key NOT GLOB 'schedule:*'
  AND activity_key NOT GLOB 'webhook:*'
  AND activity_key NOT GLOB 'run:*';
