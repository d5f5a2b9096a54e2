-- Whether any signed account may read the agent.
ALTER TABLE agents ADD COLUMN public_read INTEGER NOT NULL DEFAULT 0;
