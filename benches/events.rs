//! The Log against the plain rusqlite way of doing the same work.
//!
//! - `event_append_<sync>`: one user message per `BEGIN IMMEDIATE` transaction, seq allocation
//!   and both rollup updates included, with `synchronous=FULL` and `NORMAL` (targets:
//!   store / plain at most 1.15). The plain side runs the same statements through
//!   `prepare_cached`, encodes with `serde_ipld_dagcbor` and makes ids the same way.
//! - `event_replay_1000`: every event of a 1,000-event session (target at most 1.05).
//!
//! Both sides check the session's account in the same statement (the store refuses another
//! account's session). Each side has its own database file of the same shape, so neither reads
//! the other's rows.
//!
//! The machine these run on is shared and has two cores, so criterion's separate groups drift
//! with the load. Before them, `paired` alternates the two sides call by call (swapping which
//! goes first every round) and prints the ratio of the medians and the appends per second: both
//! sides see the same load, so that ratio is the one to read.

mod common;

use common::{event, now_ms, paired, plain_append, setup, setup_plain, ACCOUNT};
use criterion::{criterion_group, criterion_main, Criterion};
use rusqlite::Connection;
use std::time::Duration;

const REPLAYED: usize = 1_000;

/// An event row as hand-written code would hold it.
#[allow(dead_code)]
struct PlainEvent {
    id: String,
    session_id: String,
    seq: i64,
    event_cbor: Vec<u8>,
    created_at: i64,
}

fn plain_replay(conn: &Connection, session_id: &str, after: i64) -> Vec<PlainEvent> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT id, session_id, seq, event_cbor, created_at FROM session_events \
             WHERE session_id = ?1 AND seq > ?2 \
             AND EXISTS (SELECT 1 FROM sessions WHERE id = ?1 AND account_id = ?4) \
             ORDER BY seq ASC LIMIT ?3",
        )
        .unwrap();
    let rows = stmt
        .query_map((session_id, after, -1i64, ACCOUNT), |r| {
            Ok(PlainEvent {
                id: r.get(0)?,
                session_id: r.get(1)?,
                seq: r.get(2)?,
                event_cbor: r.get(3)?,
                created_at: r.get(4)?,
            })
        })
        .unwrap();
    rows.collect::<rusqlite::Result<_>>().unwrap()
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    for (synchronous, rounds) in [("FULL", 600), ("NORMAL", 3_000)] {
        let (store, mut session) = setup(
            &dir,
            &format!("paired-store-{synchronous}.sqlite"),
            synchronous,
            1,
        );
        let session = session.remove(0);
        let (mut plain, mut plain_session) = setup_plain(
            &dir,
            &format!("paired-plain-{synchronous}.sqlite"),
            synchronous,
            1,
        );
        let plain_session = plain_session.remove(0);
        let (mut i, mut j) = (0, 0);
        paired(
            &format!("event_append_{synchronous}"),
            rounds,
            ["store", "plain"],
            || {
                i += 1;
                store.append_event(ACCOUNT, &session, &event(i)).unwrap();
            },
            || {
                j += 1;
                let now = now_ms();
                plain_append(&mut plain, now, &plain_session, &event(j));
            },
        );
    }
    for synchronous in ["FULL", "NORMAL"] {
        let (store, mut session) =
            setup(&dir, &format!("store-{synchronous}.sqlite"), synchronous, 1);
        let session = session.remove(0);
        let (mut plain, mut plain_session) =
            setup_plain(&dir, &format!("plain-{synchronous}.sqlite"), synchronous, 1);
        let plain_session = plain_session.remove(0);
        let mut g = c.benchmark_group(format!("event_append_{synchronous}"));
        g.measurement_time(Duration::from_secs(8));
        g.sample_size(30);
        let mut i = 0;
        g.bench_function("store", |b| {
            b.iter(|| {
                i += 1;
                store.append_event(ACCOUNT, &session, &event(i)).unwrap()
            })
        });
        let mut i = 0;
        g.bench_function("plain", |b| {
            b.iter(|| {
                i += 1;
                let now = now_ms();
                plain_append(&mut plain, now, &plain_session, &event(i));
            })
        });
        g.finish();
    }

    let (store, mut session) = setup(&dir, "replay-store.sqlite", "NORMAL", 1);
    let session = session.remove(0);
    let (mut plain, mut plain_session) = setup_plain(&dir, "replay-plain.sqlite", "NORMAL", 1);
    let plain_session = plain_session.remove(0);
    for i in 0..REPLAYED {
        store.append_event(ACCOUNT, &session, &event(i)).unwrap();
        let now = now_ms();
        plain_append(&mut plain, now, &plain_session, &event(i));
    }
    paired(
        "event_replay_1000",
        300,
        ["store", "plain"],
        || {
            assert_eq!(
                store
                    .events_after(ACCOUNT, &session, 0, None)
                    .unwrap()
                    .len(),
                REPLAYED
            )
        },
        || assert_eq!(plain_replay(&plain, &plain_session, 0).len(), REPLAYED),
    );
    let mut g = c.benchmark_group("event_replay_1000");
    g.measurement_time(Duration::from_secs(5));
    g.bench_function("store", |b| {
        b.iter(|| {
            let events = store.events_after(ACCOUNT, &session, 0, None).unwrap();
            assert_eq!(events.len(), REPLAYED);
            events
        })
    });
    g.bench_function("plain", |b| {
        b.iter(|| {
            let events = plain_replay(&plain, &plain_session, 0);
            assert_eq!(events.len(), REPLAYED);
            events
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
