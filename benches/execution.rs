//! Execution state against plain rusqlite: the claim (at 1k and at 1M queued runs), a journal
//! append and a firing admission, each next to the same statements run through plain rusqlite
//! `prepare_cached` in the same transaction shape. Targets: claim at 1M / claim at 1k at most 2;
//! store / plain at most 1.15.
//!
//! The 1M-run database is built once and cached under `<target>/bench-data/`.
//!
//! Both sides run with `synchronous = NORMAL` (set on each connection here): with the default
//! FULL, every commit is an fsync of a few milliseconds on this machine and the comparison would
//! measure the disk, not the code.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use rusqlite::types::Value;
use rusqlite::{params, Connection, TransactionBehavior};
use seed_agents_store::cbor::Cbor;
use seed_agents_store::lease::Claim;
use seed_agents_store::payload::{
    AgentTriggerSource, JournalEntryBody, OpenMap, RunInput, Schedule, ScheduleInterval,
    ScheduleSource, TriggerActivity, WorkflowJournalEntry,
};
use seed_agents_store::plans::hot_queries;
use seed_agents_store::runs::{ClaimLimits, NewRun, LEASE_MS};
use seed_agents_store::schema::runs::{Kind, Origin};
use seed_agents_store::triggers::{FiringKey, FiringRequest, NewTrigger};
use seed_agents_store::{Durability, Store};

const ACCOUNT: &str = "acct";
const T: i64 = 1_764_000_000_000;

fn bench_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    let dir = target.join("bench-data");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Fills a fresh store with `n` queued workflow runs in one transaction (plain SQL: setup only).
fn fill(path: &PathBuf, n: usize) {
    let store = Store::open(path).unwrap();
    drop(store);
    let mut conn = Connection::open(path).unwrap();
    let input = Cbor::encode(&RunInput::default()).unwrap();
    let tx = conn.transaction().unwrap();
    tx.execute(
        "INSERT OR IGNORE INTO accounts (id, created_at, updated_at) VALUES (?1, ?2, ?2)",
        params![ACCOUNT, T],
    )
    .unwrap();
    {
        let mut stmt = tx
            .prepare(
                "INSERT INTO runs (id, account_id, root_run_id, depth, kind, origin, title, input_cbor, status,
                   attempt, max_attempts, queue, created_at, updated_at)
                 VALUES (?1, ?2, ?1, 0, 'workflow', 'workflow', 'bench', ?3, 'queued', 0, 1, 'background', ?4, ?4)",
            )
            .unwrap();
        for i in 0..n {
            stmt.execute(params![format!("run-{i:08}"), ACCOUNT, input, T + i as i64])
                .unwrap();
        }
    }
    tx.commit().unwrap();
    conn.execute_batch("ANALYZE; PRAGMA wal_checkpoint(TRUNCATE);")
        .unwrap();
}

/// The cached database with `n` queued runs.
fn queued_db(n: usize) -> PathBuf {
    let path = bench_dir().join(format!("execution-{n}.sqlite"));
    let done = path.with_extension("done");
    if !done.exists() {
        for suffix in ["", "-wal", "-shm"] {
            let mut p = path.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
        eprintln!("building {} ({n} queued runs), once", path.display());
        fill(&path, n);
        std::fs::write(&done, b"").unwrap();
    }
    path
}

/// Commits without an fsync (WAL, `synchronous = NORMAL`).
fn relaxed(conn: &Connection) {
    conn.pragma_update(None, "synchronous", "NORMAL").unwrap();
}

/// A plain connection configured like the store's (the pragmas that matter for these statements).
fn plain_conn(path: &Path) -> Connection {
    let conn = Connection::open(path).unwrap();
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    conn.pragma_update(None, "foreign_keys", true).unwrap();
    conn.pragma_update(None, "cache_size", -65_536).unwrap();
    conn.pragma_update(None, "mmap_size", 536_870_912).unwrap();
    relaxed(&conn);
    conn
}

/// Puts a claimed run back where it was (outside the timed region).
fn unclaim(conn: &Connection, id: &str) {
    conn.execute(
        "UPDATE runs SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL, attempt = 0 WHERE id = ?1",
        [id],
    )
    .unwrap();
}

/// The claim through plain rusqlite: the same statement, the same transaction, the row read into
/// plain values.
fn plain_claim(conn: &mut Connection, sql: &str, now: i64) -> Option<Vec<Value>> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .unwrap();
    let row = {
        let mut stmt = tx.prepare_cached(sql).unwrap();
        let mut rows = stmt
            .query(params![
                "w",
                now,
                i64::from(u32::MAX),
                i64::from(u32::MAX),
                now + LEASE_MS
            ])
            .unwrap();
        rows.next()
            .unwrap()
            .map(|r| (0..34).map(|i| r.get::<_, Value>(i).unwrap()).collect())
    };
    tx.commit().unwrap();
    row
}

fn claim(c: &mut Criterion) {
    let sql = hot_queries()
        .into_iter()
        .find(|q| q.0 == "claim next")
        .unwrap()
        .1;
    let mut group = c.benchmark_group("claim");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(4));
    for n in [1_000, 1_000_000] {
        let path = queued_db(n);
        let store = Store::open(&path).unwrap();
        store.set_durability(Durability::Normal).unwrap();
        // The store's own connection is read-only: the untimed reset goes through another.
        let side = plain_conn(&path);
        group.bench_function(format!("store, {n} queued"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let start = Instant::now();
                    let run = store
                        .claim_next_run("w", ClaimLimits::default())
                        .unwrap()
                        .unwrap();
                    total += start.elapsed();
                    unclaim(&side, &run.id);
                }
                total
            })
        });
        let mut conn = plain_conn(&path);
        group.bench_function(format!("plain rusqlite, {n} queued"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let start = Instant::now();
                    let row = plain_claim(&mut conn, sql, T + 10_000_000_000).unwrap();
                    total += start.elapsed();
                    let Value::Text(id) = &row[0] else { panic!() };
                    // Reset through another connection, as on the store's side (whose own
                    // connection is read-only), so both pay the same cache invalidation.
                    unclaim(&side, id);
                }
                total
            })
        });
    }
    group.finish();
}

/// A fresh store with one claimed workflow run and one enabled schedule trigger.
fn small_store() -> (tempfile::TempDir, Store, Claim, String) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("agents.sqlite")).unwrap();
    plain_conn(store.path())
        .execute_batch(&format!(
            "INSERT INTO accounts (id, created_at, updated_at) VALUES ('{ACCOUNT}', {T}, {T});
             INSERT INTO agents (id, account_id, definition_cbor, state_dir, status, created_at, updated_at)
             VALUES ('agent', '{ACCOUNT}', x'a0', '/tmp/agent', 'idle', {T}, {T});"
        ))
        .unwrap();
    let run = store
        .enqueue_run(&NewRun::new(
            ACCOUNT,
            Kind::Workflow,
            Origin::Workflow,
            "script",
        ))
        .unwrap();
    let claimed = store.claim_run(ACCOUNT, &run.id, "w").unwrap().unwrap();
    let claim = Claim::of(&claimed).unwrap();
    let trigger = store
        .create_trigger(&NewTrigger {
            id: Some("trigger".into()),
            account_id: ACCOUNT.into(),
            agent_id: "agent".into(),
            name: "bench".into(),
            enabled: true,
            source: AgentTriggerSource::Schedule(ScheduleSource {
                schedule: Schedule::Interval(ScheduleInterval {
                    interval_ms: 1_000,
                    extra: OpenMap::new(),
                }),
                extra: OpenMap::new(),
            }),
            prompt: "p".into(),
            continuation: None,
        })
        .unwrap()
        .trigger
        .id;
    store.set_durability(Durability::Normal).unwrap();
    (dir, store, claim, trigger)
}

fn entry() -> WorkflowJournalEntry {
    let mut extra = OpenMap::new();
    extra.insert(
        "message".into(),
        seed_agents_store::payload::Ipld::String("a line of log".into()),
    );
    WorkflowJournalEntry::Log(JournalEntryBody {
        call_seq: 1,
        key: None,
        extra,
    })
}

/// Journals stay between 0 and 100 entries: both sides clear them every 100 appends, untimed.
const JOURNAL_WINDOW: u64 = 100;

fn journal(c: &mut Criterion) {
    let (_dir, store, claim, _) = small_store();
    let run_id = claim.run_id.clone();
    let path = store.path().to_path_buf();
    // The store's own connection is read-only: the untimed clearing goes through another.
    let side = plain_conn(&path);
    let mut group = c.benchmark_group("journal append");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(4));
    group.bench_function("store", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for i in 0..iters {
                if i % JOURNAL_WINDOW == 0 {
                    side.execute("DELETE FROM run_journal WHERE run_id = ?1", [&run_id])
                        .unwrap();
                }
                let start = Instant::now();
                store.append_journal(&claim, &entry()).unwrap();
                total += start.elapsed();
            }
            total
        })
    });
    let mut conn = plain_conn(&path);
    conn.execute("DELETE FROM run_journal WHERE run_id = ?1", [&run_id])
        .unwrap();
    group.bench_function("plain rusqlite", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for i in 0..iters {
                if i % JOURNAL_WINDOW == 0 {
                    // Through another connection, as on the store's side.
                    side.execute("DELETE FROM run_journal WHERE run_id = ?1", [&run_id])
                        .unwrap();
                }
                let start = Instant::now();
                let bytes = seed_agents_store::cbor::to_vec(&entry()).unwrap();
                let tx = conn
                    .transaction_with_behavior(TransactionBehavior::Immediate)
                    .unwrap();
                let (status, owner, attempt): (String, String, i64) = tx
                    .prepare_cached("SELECT status, lease_owner, attempt FROM runs WHERE account_id = ?1 AND id = ?2")
                    .unwrap()
                    .query_row(params![ACCOUNT, run_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                    .unwrap();
                assert_eq!((status.as_str(), owner.as_str(), attempt), ("claimed", "w", 1));
                let (count, size): (i64, i64) = tx
                    .prepare_cached("SELECT count(*), coalesce(sum(length(entry_cbor)), 0) FROM run_journal WHERE run_id = ?1")
                    .unwrap()
                    .query_row([&run_id], |r| Ok((r.get(0)?, r.get(1)?)))
                    .unwrap();
                assert!(count < 5_000 && size < 8 << 20);
                tx.prepare_cached(
                    "INSERT INTO run_journal (run_id, seq, entry_cbor, created_at) VALUES (?1, ?2, ?3, ?4)",
                )
                .unwrap()
                .execute(params![run_id, count + 1, bytes, T])
                .unwrap();
                tx.commit().unwrap();
                total += start.elapsed();
            }
            total
        })
    });
    group.finish();
}

fn admission(c: &mut Criterion) {
    let (_dir, store, _, trigger) = small_store();
    let path = store.path().to_path_buf();
    let mut group = c.benchmark_group("firing admission");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(4));
    let mut next = 0_i64;
    group.bench_function("store", |b| {
        b.iter(|| {
            next += 1;
            store
                .admit_firing(&FiringRequest {
                    account_id: ACCOUNT.into(),
                    trigger_id: trigger.clone(),
                    key: FiringKey::Schedule { scheduled_at: next },
                    activity: TriggerActivity::default(),
                    body_digest: None,
                    matched: None,
                })
                .unwrap()
        })
    });
    let mut conn = plain_conn(&path);
    let mut next = 1_000_000_000_i64;
    group.bench_function("plain rusqlite", |b| {
        b.iter(|| {
            next += 1;
            let activity = seed_agents_store::cbor::to_vec(&TriggerActivity::default()).unwrap();
            let id = seed_agents_store::ids::new_id();
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .unwrap();
            let (agent, enabled): (String, bool) = tx
                .prepare_cached(
                    "SELECT agent_id, enabled FROM agent_triggers WHERE account_id = ?1 AND id = ?2",
                )
                .unwrap()
                .query_row(params![ACCOUNT, trigger], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap();
            assert!(enabled);
            let key = format!("schedule:{trigger}:{next}");
            let inserted = tx
                .prepare_cached(
                    "INSERT OR IGNORE INTO trigger_firings (id, account_id, agent_id, trigger_id, activity_key, session_id, run_id,
                       activity_cbor, context_cbor, body_digest, status, error, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, NULL, NULL, ?6, NULL, NULL, 'created', NULL, ?7)",
                )
                .unwrap()
                .execute(params![id, ACCOUNT, agent, trigger, key, activity, T])
                .unwrap();
            assert_eq!(inserted, 1);
            tx.prepare_cached(
                "UPDATE agent_triggers SET last_fired_at = ?3 WHERE account_id = ?1 AND id = ?2",
            )
            .unwrap()
            .execute(params![ACCOUNT, trigger, T])
            .unwrap();
            let row: Vec<Value> = tx
                .prepare_cached("SELECT id, account_id, agent_id, trigger_id, activity_key, session_id, run_id, activity_cbor, context_cbor, body_digest, status, error, created_at FROM trigger_firings WHERE account_id = ?1 AND id = ?2")
                .unwrap()
                .query_row(params![ACCOUNT, id], |r| (0..13).map(|i| r.get::<_, Value>(i)).collect())
                .unwrap();
            tx.commit().unwrap();
            row
        })
    });
    group.finish();
}

/// A server's mix on one store, one round per iteration: create a session, append three events,
/// enqueue a workflow run, claim it, start, journal and finish it, read the session's events and
/// runs, list the agent's sessions, read the run. About twenty distinct statements a round, more
/// than rusqlite's default statement cache of 16, so with that default every round prepares the
/// claim (and the rest) again; the store sizes the cache to its query sites.
fn mixed(c: &mut Criterion) {
    use seed_agents_store::payload::{MessageEvent, RunOutput, SessionEventPayload};
    use seed_agents_store::runs::RunOutcome;
    use seed_agents_store::sessions::{NewSession, SessionQuery};
    let (_dir, store, _, _) = small_store();
    let mut group = c.benchmark_group("mixed workload");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(8));
    let event: SessionEventPayload = MessageEvent::user("a message".to_string()).into();
    group.bench_function("store round", |b| {
        b.iter(|| {
            let session = store
                .create_session(
                    ACCOUNT,
                    &NewSession {
                        agent_id: "agent".into(),
                        ..NewSession::default()
                    },
                )
                .unwrap();
            for _ in 0..3 {
                store.append_event(ACCOUNT, &session.id, &event).unwrap();
            }
            let run = store
                .enqueue_run(&NewRun::new(
                    ACCOUNT,
                    Kind::Workflow,
                    Origin::Workflow,
                    "script",
                ))
                .unwrap();
            let claimed = store
                .claim_next_run("w", ClaimLimits::default())
                .unwrap()
                .unwrap();
            let claim = Claim::of(&claimed).unwrap();
            store.start_run(&claim).unwrap();
            store.append_journal(&claim, &entry()).unwrap();
            store
                .finalize_run(&claim, RunOutcome::Succeeded(RunOutput::default()))
                .unwrap();
            assert_eq!(
                store
                    .events_after(ACCOUNT, &session.id, 0, None)
                    .unwrap()
                    .len(),
                3
            );
            store.session_runs(ACCOUNT, &session.id).unwrap();
            store
                .sessions(ACCOUNT, "agent", &SessionQuery::default())
                .unwrap();
            assert!(store.run(ACCOUNT, &run.id).unwrap().is_some());
        })
    });
    group.finish();
}

criterion_group!(benches, claim, journal, admission, mixed);
criterion_main!(benches);
