-- Replay reads one session's events in seq order. Keyed by the random event id, a session's
-- events lay scattered over the file, about one page read per event; keyed by
-- (session_id, seq) they lie side by side. Measured on 1M events (benches/replay_layout.rs):
-- replaying a 100k-event session 6.9 times faster, an append no slower.
CREATE TABLE session_events_by_seq (
    id TEXT NOT NULL UNIQUE,
    session_id TEXT NOT NULL REFERENCES sessions (id),
    seq INTEGER NOT NULL,
    event_cbor BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
INSERT INTO session_events_by_seq (id, session_id, seq, event_cbor, created_at)
    SELECT id, session_id, seq, event_cbor, created_at FROM session_events ORDER BY session_id, seq;
DROP TABLE session_events;
ALTER TABLE session_events_by_seq RENAME TO session_events;
