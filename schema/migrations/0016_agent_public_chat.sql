-- Whether any signed account may chat with the agent.
ALTER TABLE agents ADD COLUMN public_chat INTEGER NOT NULL DEFAULT 0;
