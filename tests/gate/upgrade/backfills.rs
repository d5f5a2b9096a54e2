//! 2. Backfills, row by row

use super::*;

pub(super) const T: i64 = 1_764_000_000_000;
pub(super) const CBOR: &[u8] = &[0xa1, 0x61, b'k', 0x61, b'v'];

/// An account and an agent (every version has both tables).
pub(super) fn seed_owner(conn: &Connection, account: &str, agent: &str) {
    conn.execute(
        "INSERT INTO accounts (id, created_at, updated_at) VALUES (?1, ?2, ?2)",
        params![account, T],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO agents (id, account_id, definition_cbor, state_dir, status, created_at, updated_at) \
         VALUES (?1, ?2, ?3, '/tmp/agent', 'idle', ?4, ?4)",
        params![agent, account, CBOR, T],
    )
    .unwrap();
}

pub(super) fn column_by_id(conn: &Connection, table: &str, column: &str) -> Vec<(String, Value)> {
    let mut stmt = conn
        .prepare(&format!(
            "SELECT id, \"{column}\" FROM \"{table}\" ORDER BY id"
        ))
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

#[test]
pub(super) fn a_migration_gathers_planner_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stats.sqlite");
    let k = SCHEMA_VERSION - 1;
    let conn = build_at(&path, k);
    fill(&conn);
    conn.close().unwrap();
    let store = open_expecting(
        &path,
        Outcome::Migrated {
            from: k,
            to: SCHEMA_VERSION,
        },
    );
    let rows: i64 = store
        .conn()
        .unwrap()
        .query_row(
            "SELECT count(*) FROM sqlite_stat1 WHERE tbl = 'runs'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(rows > 0, "no statistics for runs after the migration");
}

#[test]
pub(super) fn version_5_sets_title_source_from_the_title() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v4.sqlite");
    let conn = build_at(&path, 4);
    seed_owner(&conn, "acct-1", "agent-1");
    let cases: &[(&str, Option<&str>, &str)] = &[
        ("s-01-null", None, "system"),
        ("s-02-empty", Some(""), "system"),
        ("s-03-untitled", Some("Untitled session"), "system"),
        ("s-04-real", Some("Quarterly report"), "user"),
        // Only the exact placeholder counts: other spellings were typed by someone.
        ("s-05-lower", Some("untitled session"), "user"),
        ("s-06-trailing", Some("Untitled session "), "user"),
        ("s-07-space", Some(" "), "user"),
    ];
    for (id, title, _) in cases {
        conn.execute(
            "INSERT INTO sessions (id, account_id, agent_id, title, status, created_at, updated_at) \
             VALUES (?1, 'acct-1', 'agent-1', ?2, 'idle', ?3, ?3)",
            params![id, title, T],
        )
        .unwrap();
    }
    let before = snapshot(&conn);
    conn.close().unwrap();

    let store = open_expecting(
        &path,
        Outcome::Migrated {
            from: 4,
            to: SCHEMA_VERSION,
        },
    );
    let sources = column_by_id(&store.conn().unwrap(), "sessions", "title_source");
    let expected: Vec<(String, Value)> = cases
        .iter()
        .map(|(id, _, source)| (id.to_string(), text(source)))
        .collect();
    assert_eq!(sources, expected);
    let titles = column_by_id(&store.conn().unwrap(), "sessions", "title");
    let expected: Vec<(String, Value)> = cases
        .iter()
        .map(|(id, title, _)| (id.to_string(), title.map_or(Value::Null, text)))
        .collect();
    assert_eq!(titles, expected, "titles are left alone");
    assert_upgraded(4, &before, &store.conn().unwrap());
}

#[test]
pub(super) fn version_11_titles_untitled_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v10.sqlite");
    let conn = build_at(&path, 10);
    seed_owner(&conn, "acct-1", "agent-1");
    // (id, kind, parent, title before, title after); parents are inserted first.
    type Case<'a> = (&'a str, &'a str, Option<&'a str>, Option<&'a str>, &'a str);
    let cases: &[Case] = &[
        ("r-01", "agent", None, None, "Agent turn"),
        ("r-02", "agent", None, Some(""), "Agent turn"),
        ("r-03", "agent", Some("r-01"), Some("  "), "Sub-session"),
        ("r-04", "agent", Some("r-01"), None, "Sub-session"),
        ("r-05", "workflow", None, None, "Workflow"),
        ("r-06", "workflow", None, Some(""), "Workflow"),
        // A workflow child is a Workflow: the kind decides before the parent does.
        ("r-07", "workflow", Some("r-01"), Some("   "), "Workflow"),
        (
            "r-08",
            "agent",
            None,
            Some("Summarize the inbox"),
            "Summarize the inbox",
        ),
        ("r-09", "agent", Some("r-01"), Some("Research"), "Research"),
        (
            "r-10",
            "workflow",
            None,
            Some("Nightly sync"),
            "Nightly sync",
        ),
        // A real title is kept byte for byte, padding included.
        ("r-11", "agent", None, Some("  Padded  "), "  Padded  "),
    ];
    for (id, kind, parent, title, _) in cases {
        conn.execute(
            "INSERT INTO runs (id, account_id, root_run_id, parent_run_id, kind, agent_id, origin, \
             title, input_cbor, status, created_at, updated_at) \
             VALUES (?1, 'acct-1', ?2, ?3, ?4, 'agent-1', 'user', ?5, ?6, 'succeeded', ?7, ?7)",
            params![id, parent.unwrap_or(id), parent, kind, title, CBOR, T],
        )
        .unwrap();
    }
    let before = snapshot(&conn);
    conn.close().unwrap();

    let store = open_expecting(
        &path,
        Outcome::Migrated {
            from: 10,
            to: SCHEMA_VERSION,
        },
    );
    let titles = column_by_id(&store.conn().unwrap(), "runs", "title");
    let expected: Vec<(String, Value)> = cases
        .iter()
        .map(|(id, _, _, _, after)| (id.to_string(), text(after)))
        .collect();
    assert_eq!(titles, expected);
    assert_upgraded(10, &before, &store.conn().unwrap());
}

#[test]
pub(super) fn version_26_claims_every_activity_firing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v25.sqlite");
    let conn = build_at(&path, 25);
    seed_owner(&conn, "acct-1", "agent-1");
    seed_owner(&conn, "acct-2", "agent-2");
    for (id, account, agent) in [
        ("trig-1", "acct-1", "agent-1"),
        ("trig-2", "acct-2", "agent-2"),
    ] {
        conn.execute(
            "INSERT INTO agent_triggers (id, account_id, agent_id, name, enabled, source_cbor, prompt, \
             created_at, updated_at) VALUES (?1, ?2, ?3, ?1, 1, ?4, 'Reply', ?5, ?5)",
            params![id, account, agent, CBOR, T],
        )
        .unwrap();
    }
    // (firing id, trigger, activity key, claimed)
    let cases: &[(&str, &str, &str, bool)] = &[
        ("f-01", "trig-1", "blob-bafyabc", true),
        ("f-02", "trig-1", "schedule:trig-1:1764000000000", false),
        ("f-03", "trig-1", "webhook:idem-1", false),
        ("f-04", "trig-1", "run:run-1", false),
        // The match is case-sensitive: these are activity keys.
        ("f-05", "trig-1", "Schedule:x", true),
        ("f-06", "trig-1", "WEBHOOK:y", true),
        ("f-07", "trig-1", "Run:z", true),
        // A prefix needs its colon and must come first.
        ("f-08", "trig-1", "schedule", true),
        ("f-09", "trig-1", "runs:x", true),
        ("f-10", "trig-1", "x:schedule:y", true),
        ("f-11", "trig-1", "", true),
        // GLOB metacharacters in a key are data.
        ("f-12", "trig-1", "a*[b]?", true),
        ("f-13", "trig-2", "blob-bafyabc", true),
        ("f-14", "trig-2", "schedule:trig-2:1", false),
        ("f-15", "trig-2", "webhook:", false),
        ("f-16", "trig-2", "run:", false),
    ];
    let account_of = |trigger: &str| {
        if trigger == "trig-1" {
            "acct-1"
        } else {
            "acct-2"
        }
    };
    let agent_of = |trigger: &str| {
        if trigger == "trig-1" {
            "agent-1"
        } else {
            "agent-2"
        }
    };
    for (i, (id, trigger, key, _)) in cases.iter().enumerate() {
        conn.execute(
            "INSERT INTO trigger_firings (id, account_id, agent_id, trigger_id, activity_key, \
             activity_cbor, status, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'succeeded', ?7)",
            params![
                id,
                account_of(trigger),
                agent_of(trigger),
                trigger,
                key,
                CBOR,
                T + i as i64
            ],
        )
        .unwrap();
    }
    let before = snapshot(&conn);
    conn.close().unwrap();

    let store = open_expecting(
        &path,
        Outcome::Migrated {
            from: 25,
            to: SCHEMA_VERSION,
        },
    );
    let conn = store.conn().unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT firing_id, account_id, trigger_id, activity_key, created_at \
             FROM trigger_event_claims ORDER BY firing_id",
        )
        .unwrap();
    let claims: Vec<(String, String, String, String, i64)> = stmt
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    let expected: Vec<(String, String, String, String, i64)> = cases
        .iter()
        .enumerate()
        .filter(|(_, c)| c.3)
        .map(|(i, (id, trigger, key, _))| {
            (
                id.to_string(),
                account_of(trigger).to_string(),
                trigger.to_string(),
                key.to_string(),
                T + i as i64,
            )
        })
        .collect();
    assert_eq!(claims, expected);
    drop(stmt);
    assert_upgraded(25, &before, &store.conn().unwrap());
}
