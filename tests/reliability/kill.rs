//! `kill -9` at seeded random moments never loses or half-applies anything:
//! - during the migration of a multi-MB database from version 10, run by the CLI: afterwards
//!   `integrity_check` is ok, the file is wholly at version 10 (stamp and structure) or wholly at
//!   the newest version, no row is lost, and a re-open succeeds;
//! - during appends by several processes, each printing the seq of an append once it has
//!   committed: afterwards `integrity_check` is ok, every acknowledged append is present with
//!   its id, every session's seqs are contiguous, and a re-open succeeds.
//!
//! Each test prints its counts; a failure names the trial and the moment of the kill.

// `kill -9` and the exit status that reports it are Unix.
#![cfg(unix)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rusqlite::{params, Connection};
use seed_agents_store::schema::SCHEMA_VERSION;
use seed_agents_store::{Outcome, Store};
use support::old_versions::{build_at, stamped_version};
use support::reliability::*;

/// The version the migration trials start from: runs (data migration 11) and trigger firings
/// (data migration 26) exist, and most of the history is still to apply.
const OLD: u32 = 10;
/// Runs in the old database; with their indexes, several MB.
const RUNS: usize = 12_000;
/// Trigger firings in the old database (copied into claims by migration 26).
const FIRINGS: usize = 3_000;
const MIGRATION_KILLS: u64 = 40;

/// The signal `Child::kill` sends.
const SIGKILL: i32 = 9;

const APPENDERS: usize = 4;
const APPEND_ROUNDS: u64 = 10;
const DB: &str = "RELIABILITY_KILL_DB";
const SESSIONS: &str = "RELIABILITY_KILL_SESSIONS";
const INDEX: &str = "RELIABILITY_KILL_INDEX";
/// Threads an appender runs, sharing its one store.
const THREADS: &str = "RELIABILITY_KILL_THREADS";
/// The trial of one process's threads sharing a store (its writer thread, its batches).
const SHARED_THREADS: usize = 32;
const SHARED_KILLS: u64 = 24;

/// Builds the old database: version `OLD`, one account, agent, session and trigger, `RUNS` runs
/// with untitled rows and a few hundred bytes of source each, and `FIRINGS` activity firings.
fn build_old(path: &Path) {
    let mut conn = build_at(path, OLD);
    let tx = conn.transaction().unwrap();
    tx.execute_batch(
        "INSERT INTO accounts (id, created_at, updated_at) VALUES ('a', 1, 1);
         INSERT INTO agents (id, account_id, definition_cbor, state_dir, status, created_at, updated_at)
           VALUES ('ag', 'a', x'a0', '/tmp/ag', 'idle', 1, 1);
         INSERT INTO sessions (id, account_id, agent_id, status, created_at, updated_at)
           VALUES ('s', 'a', 'ag', 'idle', 1, 1);
         INSERT INTO agent_triggers (id, account_id, agent_id, name, enabled, source_cbor, prompt, created_at, updated_at)
           VALUES ('t', 'a', 'ag', 'watch', 1, x'a0', 'go', 1, 1);",
    )
    .unwrap();
    let source = "x".repeat(300);
    for i in 0..RUNS {
        let kind = if i % 2 == 0 { "workflow" } else { "agent" };
        tx.execute(
            "INSERT INTO runs (id, account_id, root_run_id, kind, origin, source_text, input_cbor, status, created_at, updated_at)
             VALUES (?1, 'a', ?1, ?2, 'user', ?3, x'a0', 'succeeded', ?4, ?4)",
            params![format!("run-{i:06}"), kind, source, i as i64],
        )
        .unwrap();
    }
    for i in 0..FIRINGS {
        tx.execute(
            "INSERT INTO trigger_firings (id, account_id, agent_id, trigger_id, activity_key, activity_cbor, status, created_at)
             VALUES (?1, 'a', 'ag', 't', ?2, x'a0', 'succeeded', ?3)",
            params![format!("firing-{i:06}"), format!("activity:{i}"), i as i64],
        )
        .unwrap();
    }
    tx.commit().unwrap();
}

/// Every object of the schema (SQLite's own tables left out), in name order.
fn structure(conn: &Connection) -> Vec<(String, String, Option<String>)> {
    conn.prepare(
        "SELECT type, name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
    )
    .unwrap()
    .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
    .unwrap()
    .collect::<rusqlite::Result<_>>()
    .unwrap()
}

fn count(conn: &Connection, table: &str) -> i64 {
    conn.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
        .unwrap()
}

/// Runs `seed-agents-db open` on `path`.
fn cli_open(path: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_seed-agents-db"))
        .arg("--db-path")
        .arg(path)
        .arg("open")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn kill_9_during_a_migration_leaves_the_old_or_the_new_version_never_between() {
    if role().is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("template.sqlite");
    build_old(&template);
    let old_structure = structure(&Connection::open(&template).unwrap());
    let size = std::fs::metadata(&template).unwrap().len();
    // One uninterrupted migration through the CLI: the new structure, and how long it takes.
    let reference = dir.path().join("reference.sqlite");
    std::fs::copy(&template, &reference).unwrap();
    let started = Instant::now();
    let out = cli_open(&reference).wait_with_output().unwrap();
    let length = started.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let new_structure = structure(&Connection::open(&reference).unwrap());
    assert_ne!(old_structure, new_structure);

    let mut rng = StdRng::seed_from_u64(0x6b696c6c);
    let (mut at_old, mut at_new, mut mid_write) = (0, 0, 0);
    for trial in 0..MIGRATION_KILLS {
        let path = dir.path().join(format!("trial{trial}.sqlite"));
        std::fs::copy(&template, &path).unwrap();
        // Moments spread over the whole run, from process start to just after it ends.
        let delay = length.mul_f64(rng.gen_range(0.0..1.1));
        let mut child = cli_open(&path);
        std::thread::sleep(delay);
        child.kill().unwrap_or_default();
        let ctx = format!("trial {trial} (kill after {delay:?} of a {length:?} migration)");
        let out = child.wait_with_output().unwrap();
        // Either the kill landed, or the migration had already finished successfully.
        assert!(
            out.status.signal() == Some(SIGKILL) || out.status.success(),
            "{ctx}: the CLI failed on its own ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        // A non-empty rollback journal: the kill landed inside the migration's transaction.
        let journal = dir.path().join(format!("trial{trial}.sqlite-journal"));
        if std::fs::metadata(&journal).is_ok_and(|m| m.len() > 0) {
            mid_write += 1;
        }

        // A plain connection rolls back a hot journal left by the kill, as the next open would.
        let conn = Connection::open(&path).unwrap();
        assert_eq!(integrity(&conn), "ok", "{ctx}");
        let version = stamped_version(&conn);
        let shape = structure(&conn);
        if version == OLD.to_string() {
            assert_eq!(
                shape, old_structure,
                "{ctx}: stamped {OLD}, structure in between"
            );
            at_old += 1;
        } else {
            assert_eq!(
                version,
                SCHEMA_VERSION.to_string(),
                "{ctx}: stamped in between"
            );
            assert_eq!(
                shape, new_structure,
                "{ctx}: stamped new, structure in between"
            );
            assert_eq!(
                count(&conn, "trigger_event_claims"),
                FIRINGS as i64,
                "{ctx}"
            );
            at_new += 1;
        }
        assert_eq!(count(&conn, "runs"), RUNS as i64, "{ctx}: runs lost");
        assert_eq!(
            count(&conn, "trigger_firings"),
            FIRINGS as i64,
            "{ctx}: firings lost"
        );
        drop(conn);

        let store = Store::open(&path).unwrap_or_else(|e| panic!("{ctx}: re-open: {e}"));
        let expected = if version == OLD.to_string() {
            Outcome::Migrated {
                from: OLD,
                to: SCHEMA_VERSION,
            }
        } else {
            Outcome::Current {
                version: SCHEMA_VERSION,
            }
        };
        assert_eq!(store.outcome(), expected, "{ctx}");
        drop(store);
        std::fs::remove_file(&path).unwrap();
    }
    println!(
        "{MIGRATION_KILLS} kills during the migration of a {:.1} MB file ({length:?} uninterrupted): \
         {mid_write} inside its transaction, {at_old} left at version {OLD}, {at_new} at {SCHEMA_VERSION}, 0 failures",
        size as f64 / 1e6
    );
}

/// An appender child and the `ACK session seq id` lines it has printed so far.
struct Appender {
    child: Child,
    acks: Arc<Mutex<Vec<String>>>,
    reader: std::thread::JoinHandle<()>,
}

fn spawn_appender(path: &Path, sessions: &[String], index: usize, threads: usize) -> Appender {
    let mut child = spawn(
        &support::child_test!("append_child"),
        "appender",
        &[
            (DB, path.display().to_string()),
            (SESSIONS, sessions.join(",")),
            (INDEX, index.to_string()),
            (THREADS, threads.to_string()),
        ],
    );
    let stdout = child.stdout.take().unwrap();
    let acks = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&acks);
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(at) = line.find("ACK ") {
                sink.lock().unwrap().push(line[at + 4..].to_owned());
            }
        }
    });
    Appender {
        child,
        acks,
        reader,
    }
}

#[test]
fn kill_9_during_appends_by_several_processes_loses_no_acknowledged_append() {
    if role().is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agents.sqlite");
    let (store, sessions) = store_with_sessions(&path, APPENDERS + 1);
    drop(store);
    let mut rng = StdRng::seed_from_u64(0x61636b73);
    let mut acknowledged: Vec<String> = Vec::new();
    let mut kills = 0;
    for round in 0..APPEND_ROUNDS {
        let mut appenders: Vec<_> = (0..APPENDERS)
            .map(|i| spawn_appender(&path, &sessions, i, 1))
            .collect();
        // The clock starts once every appender has committed something.
        let deadline = Instant::now() + Duration::from_secs(120);
        while appenders.iter().any(|a| a.acks.lock().unwrap().is_empty()) {
            assert!(
                Instant::now() < deadline,
                "round {round}: an appender never appended"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        let mut moments: Vec<(Duration, usize)> = (0..APPENDERS)
            .map(|i| (Duration::from_millis(rng.gen_range(0..400)), i))
            .collect();
        moments.sort();
        let start = Instant::now();
        for (at, i) in moments {
            std::thread::sleep(at.saturating_sub(start.elapsed()));
            appenders[i].child.kill().unwrap();
            kills += 1;
        }
        for mut a in appenders {
            let status = a.child.wait().unwrap();
            assert_eq!(
                status.signal(),
                Some(SIGKILL),
                "round {round}: an appender stopped on its own ({status})"
            );
            a.reader.join().unwrap();
            acknowledged.extend(a.acks.lock().unwrap().drain(..));
        }

        check_acknowledged(&path, &acknowledged, &format!("round {round}"));
    }
    assert!(acknowledged.len() >= APPENDERS * APPEND_ROUNDS as usize);
    println!(
        "{kills} kills during appends by {APPENDERS} processes, {} acknowledged appends, all present, 0 failures",
        acknowledged.len()
    );
}

/// Every acknowledged append (`session seq id`) is in the file, the file is whole, no session's
/// seqs have a gap, and the store opens at the current version.
fn check_acknowledged(path: &Path, acknowledged: &[String], ctx: &str) {
    let conn = Connection::open(path).unwrap();
    assert_eq!(integrity(&conn), "ok", "{ctx}");
    for ack in acknowledged {
        let mut parts = ack.split(' ');
        let (session, seq, id) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        let stored: Option<String> = conn
            .query_row(
                "SELECT id FROM session_events WHERE session_id = ?1 AND seq = ?2",
                params![session, seq.parse::<i64>().unwrap()],
                |r| r.get(0),
            )
            .ok();
        assert_eq!(
            stored.as_deref(),
            Some(id),
            "{ctx}: acknowledged append {ack} is missing"
        );
    }
    let seqs: BTreeMap<String, (i64, i64)> = conn
        .prepare("SELECT session_id, COUNT(*), COALESCE(MAX(seq), 0) FROM session_events GROUP BY session_id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?))))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    for (session, (n, max)) in &seqs {
        assert_eq!(n, max, "{ctx}: the seqs of {session} have a gap");
    }
    drop(conn);
    let store = Store::open(path).unwrap_or_else(|e| panic!("{ctx}: re-open: {e}"));
    assert_eq!(
        store.outcome(),
        Outcome::Current {
            version: SCHEMA_VERSION
        }
    );
}

/// 32 threads of one process share one store, so their appends are batched by its writer
/// thread; the process is killed at a random moment, 24 times. Every append a thread saw
/// acknowledged is in the file.
#[test]
fn kill_9_during_appends_by_32_threads_sharing_one_store_loses_no_acknowledged_append() {
    if role().is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agents.sqlite");
    let (store, sessions) = store_with_sessions(&path, SHARED_THREADS + 1);
    drop(store);
    let mut rng = StdRng::seed_from_u64(0x73686172);
    let mut acknowledged: Vec<String> = Vec::new();
    for kill in 0..SHARED_KILLS {
        let mut appender = spawn_appender(&path, &sessions, 0, SHARED_THREADS);
        let deadline = Instant::now() + Duration::from_secs(120);
        while appender.acks.lock().unwrap().is_empty() {
            assert!(
                Instant::now() < deadline,
                "kill {kill}: nothing was appended"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        std::thread::sleep(Duration::from_millis(rng.gen_range(0..300)));
        appender.child.kill().unwrap();
        let status = appender.child.wait().unwrap();
        assert_eq!(status.signal(), Some(SIGKILL), "kill {kill}: {status}");
        appender.reader.join().unwrap();
        acknowledged.extend(appender.acks.lock().unwrap().drain(..));
        check_acknowledged(&path, &acknowledged, &format!("kill {kill}"));
    }
    println!(
        "{SHARED_KILLS} kills of {SHARED_THREADS} threads sharing one store, {} acknowledged appends, all present",
        acknowledged.len()
    );
}

/// The child side: appends in turn to the shared session and its own, printing
/// `ACK session seq id` after each commit, until it is killed; with several threads, each
/// thread has a session of its own.
#[test]
fn append_child() {
    if role().as_deref() != Some("appender") {
        return;
    }
    let sessions: Vec<String> = std::env::var(SESSIONS)
        .unwrap()
        .split(',')
        .map(str::to_owned)
        .collect();
    let index: usize = std::env::var(INDEX).unwrap().parse().unwrap();
    let threads: usize = std::env::var(THREADS).unwrap().parse().unwrap();
    let store = Store::open(std::env::var(DB).unwrap()).unwrap();
    let append = |own: usize| {
        for n in 0u64.. {
            let session = if n % 2 == 0 {
                &sessions[0]
            } else {
                &sessions[1 + own]
            };
            let appended = store
                .append_event(ACCOUNT, session, &message(format!("{own} {n}")))
                .unwrap();
            println!("ACK {session} {} {}", appended.seq, appended.id);
        }
    };
    std::thread::scope(|s| {
        for t in 0..threads {
            s.spawn(move || append(index * threads + t));
        }
    });
}
