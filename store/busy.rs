//! Waiting out other connections' locks: the busy handler of every connection the store opens.
//!
//! SQLite has no queue for its file locks: a connection that finds the write lock taken asks its
//! busy handler whether to try again. The default handler (`busy_timeout`) sleeps 1, 2, 5, 10 ...
//! up to 100 ms between tries. Under a crowd of writers a waiter deep in its back-off sleeps
//! 100 ms at a time while the others, polling every few milliseconds, take the lock in turn, so
//! it can lose every round until its 5 s run out: the rare "database is locked" failures of
//! eight processes in tight loops. This handler polls in short, jittered steps (so no waiter
//! falls behind the others and they do not wake in step) and waits for longer.
//!
//! Invariant: a connection gives up on a lock, with `SQLITE_BUSY`, only after [`DEADLINE`] of
//! continuous waiting for that one lock, never earlier. Every `BEGIN IMMEDIATE` and every
//! autocommit write goes through the handler, since neither holds a snapshot that could go stale
//! while it waits; the store starts no deferred transaction that later writes (such an upgrade
//! would fail at once, without asking the handler).

use std::time::{Duration, Instant};

use rand::Rng;
use rusqlite::Connection;

/// How long one wait for a lock may last before the operation fails with `SQLITE_BUSY`.
pub const DEADLINE: Duration = Duration::from_secs(10);

/// The longest sleep between two tries: short next to a write transaction, so a waiter is
/// never many commits behind the others.
const MAX_STEP: Duration = Duration::from_millis(4);

/// The first sleep: a lock held for one short write is often free again within this.
const FIRST_STEP: Duration = Duration::from_micros(100);

/// Installs the store's busy handler on `conn` (replacing SQLite's timeout-based one).
///
/// # Errors
/// [`rusqlite::Error`] when SQLite refuses the handler.
pub fn install(conn: &mut Connection) -> rusqlite::Result<()> {
    conn.busy_handler(Some(handler(DEADLINE)))
}

/// A busy handler that sleeps a [`step`] and asks for another try until `deadline` has passed
/// since the first try for the current lock.
fn handler(deadline: Duration) -> impl FnMut(i32) -> bool + Send + 'static {
    let mut started = Instant::now();
    move |tries| {
        // SQLite counts the tries for the current lock from 0, so 0 starts a new wait.
        if tries == 0 {
            started = Instant::now();
        }
        let waited = started.elapsed();
        if waited >= deadline {
            return false;
        }
        std::thread::sleep(step(tries).min(deadline - waited));
        true
    }
}

/// The sleep before try `tries + 1`: doubling from [`FIRST_STEP`] up to [`MAX_STEP`], each
/// scaled by a random factor in [0.5, 1) so that waiters spread out.
fn step(tries: i32) -> Duration {
    let doubled = FIRST_STEP.saturating_mul(1 << tries.clamp(0, 16));
    doubled
        .min(MAX_STEP)
        .mul_f64(rand::thread_rng().gen_range(0.5..1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_grow_from_the_first_and_stay_under_the_cap() {
        for tries in 0..64 {
            let s = step(tries);
            assert!(s <= MAX_STEP, "try {tries}: {s:?}");
            assert!(s >= FIRST_STEP / 2, "try {tries}: {s:?}");
        }
        assert!(step(0) < FIRST_STEP);
        assert!(step(40) >= MAX_STEP / 2);
    }

    #[test]
    fn a_wait_gives_up_only_once_the_deadline_has_passed_and_a_new_lock_starts_afresh() {
        let deadline = Duration::from_millis(30);
        let mut h = handler(deadline);
        for _ in 0..2 {
            let started = Instant::now();
            let mut tries = 0;
            while h(tries) {
                tries += 1;
                assert!(tries < 100_000, "the handler never gave up");
            }
            assert!(started.elapsed() >= deadline);
            assert!(tries > 1, "gave up after {tries} tries");
        }
    }

    #[test]
    fn a_lock_held_by_another_connection_is_waited_for_and_then_taken() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("busy.sqlite");
        let holder = Connection::open(&path).unwrap();
        holder
            .execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (x INTEGER);")
            .unwrap();
        holder
            .execute_batch("BEGIN IMMEDIATE; INSERT INTO t VALUES (1);")
            .unwrap();
        let mut waiter = Connection::open(&path).unwrap();
        install(&mut waiter).unwrap();
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            holder.execute_batch("COMMIT").unwrap();
        });
        waiter
            .execute_batch("BEGIN IMMEDIATE; INSERT INTO t VALUES (2); COMMIT;")
            .unwrap();
        release.join().unwrap();
        let n: i64 = waiter
            .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 2);
    }
}
