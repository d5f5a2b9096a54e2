//! Waiting out other connections' locks: the busy handler of every connection the store opens.
//!
//! SQLite has no queue for its file locks: a connection that finds the write lock taken asks its
//! busy handler whether to try again, and whoever tries at the moment the lock is free gets it.
//! The default handler (`busy_timeout`) backs off, sleeping 1, 2, 5, 10 ... up to 100 ms between
//! tries, so the longer a connection has waited the less often it tries: under a crowd of
//! writers the oldest waiter is the least likely to win, and can lose every round until its 5 s
//! run out (the rare "database is locked" failures of eight processes in tight loops). This
//! handler does the opposite: a waiter tries more often the longer it has waited, so the oldest
//! waiter is the likeliest to find the lock free, which approximates a queue. Sleeps are jittered
//! so that waiters do not wake in step. Once a wait passes [`PATIENT_AFTER`] the holder is doing
//! long work (a migration, a bulk write), not contending, and the waiter polls slowly again.
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

/// After this long a wait is for long work, not contention: polling slows down again.
pub const PATIENT_AFTER: Duration = Duration::from_secs(1);

/// The sleep before the next try, by how long the wait has lasted so far (each jittered down
/// to half): shorter and shorter while contending, then slow once the wait is patient.
const STEPS: [(Duration, Duration); 4] = [
    (Duration::from_millis(20), Duration::from_micros(1_000)),
    (Duration::from_millis(200), Duration::from_micros(300)),
    (PATIENT_AFTER, Duration::from_micros(100)),
    (DEADLINE, Duration::from_millis(5)),
];

/// Installs the store's busy handler on `conn` (replacing SQLite's timeout-based one).
///
/// # Errors
/// [`rusqlite::Error`] when SQLite refuses the handler.
pub fn install(conn: &mut Connection) -> rusqlite::Result<()> {
    install_with(conn, DEADLINE)
}

/// [`install`] with another deadline than [`DEADLINE`] (`OpenOptions::busy_timeout`).
///
/// # Errors
/// [`rusqlite::Error`] when SQLite refuses the handler.
pub fn install_with(conn: &mut Connection, deadline: Duration) -> rusqlite::Result<()> {
    conn.busy_handler(Some(handler(deadline)))
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
        std::thread::sleep(step(waited).min(deadline - waited));
        true
    }
}

/// The sleep after a wait of `waited`: the [`STEPS`] entry for it, scaled by a random factor in
/// [0.5, 1) so that waiters spread out.
fn step(waited: Duration) -> Duration {
    let base = STEPS
        .iter()
        .find(|(until, _)| waited < *until)
        .map_or(STEPS[STEPS.len() - 1].1, |(_, sleep)| *sleep);
    base.mul_f64(rand::thread_rng().gen_range(0.5..1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contending_waiters_poll_more_often_the_longer_they_wait_until_patient() {
        let ms = Duration::from_millis;
        let at = |w| (step(w), step(w));
        let (fresh, old, oldest, patient) = (at(ms(0)), at(ms(50)), at(ms(500)), at(ms(3_000)));
        for (lo, hi, s) in [
            (ms(1) / 2, ms(1), fresh),
            (ms(3) / 20, ms(3) / 10, old),
            (ms(1) / 20, ms(1) / 10, oldest),
            (ms(5) / 2, ms(5), patient),
        ] {
            for one in [s.0, s.1] {
                assert!(lo <= one && one < hi, "{one:?} outside {lo:?}..{hi:?}");
            }
        }
    }

    #[test]
    fn a_wait_gives_up_only_once_the_deadline_has_passed_and_a_new_lock_starts_afresh() {
        // Long enough that a loaded machine (a parallel build) still fits several ~1 ms polls in.
        let deadline = Duration::from_millis(250);
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
