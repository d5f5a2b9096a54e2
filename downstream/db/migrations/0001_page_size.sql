-- Dashboards page their runs: how many per page, per account.
ALTER TABLE user_preferences ADD COLUMN page_size INTEGER NOT NULL DEFAULT 50;
