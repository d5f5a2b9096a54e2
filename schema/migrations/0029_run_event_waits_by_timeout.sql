-- The timeout sweep finds expired waits without a scan.
CREATE INDEX run_event_waits_by_timeout ON run_event_waits (timeout_at);
