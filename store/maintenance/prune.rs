//! Pruning: applies the retention policies ([`super::retention`]) in bounded batches, and gives
//! the freed pages back to the file system.
//!
//! Invariants:
//! - every batch is its own write through the store's one transaction frame (and so its
//!   group-commit writer), and removes at most [`PruneOptions::batch_rows`] rows: the write lock
//!   is held for one short batch at a time, and other writes run between batches;
//! - the cutoff of each kind is fixed when the prune starts (its start time minus the policy's
//!   age), so a prune ends even while the server keeps writing;
//! - a dry run writes nothing: it counts, on one read snapshot, what the same walk would remove;
//! - when the file's `auto_vacuum` is `INCREMENTAL`, a real prune then returns the free pages
//!   with `PRAGMA incremental_vacuum`, [`VACUUM_STEP_PAGES`] pages per write, also bounded.
//!
//! Measured on the 1M-event file (`benches/prune.rs`): one batch of [`DEFAULT_BATCH_ROWS`]
//! events took 3.8 ms median (15.8 ms on a loaded run, slowest 19.9 ms), under the 20 ms
//! target, and a batch's time grows with its rows; see the README's "Retention and pruning".

use std::collections::BTreeMap;
use std::time::Duration;

use crate::error::Result;
use crate::maintenance::passes::{self, Mode, Pass, Position, Tally};
use crate::maintenance::retention::{policies, Kind};
use crate::values::check::invalid;
use crate::Store;

/// The default largest number of rows one batch removes.
pub const DEFAULT_BATCH_ROWS: usize = 250;
/// The largest `batch_rows` accepted: beyond it one batch could hold the write lock for long.
pub const MAX_BATCH_ROWS: usize = 100_000;
/// How many free pages one incremental-vacuum write gives back.
pub const VACUUM_STEP_PAGES: i64 = 2_048;

/// How to prune.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PruneOptions {
    /// Count what would be removed, and remove nothing.
    pub dry_run: bool,
    /// The most rows one batch (one write transaction) removes; 1 to [`MAX_BATCH_ROWS`].
    pub batch_rows: usize,
    /// Stop after this many batches (at least 1), to spread a large prune over time: what is
    /// left stays old, and the next prune removes it. `None` runs until nothing old is left.
    pub max_batches: Option<u64>,
}

impl Default for PruneOptions {
    fn default() -> Self {
        Self {
            dry_run: false,
            batch_rows: DEFAULT_BATCH_ROWS,
            max_batches: None,
        }
    }
}

/// What a prune removed, or would have removed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PruneReport {
    /// Whether this was a dry run (then `removed` is what would be removed).
    pub dry_run: bool,
    /// The kinds that had a policy, so were pruned.
    pub kinds: Vec<Kind>,
    /// Rows removed per table, each table of a pruned kind listed, zeros included.
    pub removed: BTreeMap<&'static str, u64>,
    /// How many delete batches ran (each one write transaction).
    pub batches: u64,
    /// The longest of those batches, from asking for the write to its commit (the WAL
    /// checkpoint that may follow runs on a read connection, holds no write lock, and is not
    /// counted).
    pub longest_batch: Duration,
    /// Pages given back to the file system by `incremental_vacuum` (0 for a dry run, or when the
    /// file's `auto_vacuum` is not `INCREMENTAL`).
    pub pages_freed: u64,
}

impl PruneReport {
    /// Rows removed in all.
    pub fn total(&self) -> u64 {
        self.removed.values().sum()
    }
}

/// The passes the current policies ask for, in the order they run: idempotency rows, events,
/// run trees (journals and waits with them), then the journals of runs whose tree stays.
fn passes(store: &Store) -> Result<Vec<Pass>> {
    let now = store.now_ms();
    let policies = policies(&store.reading()?.db())?;
    let cutoff = |max_age_ms: i64| now.saturating_sub(max_age_ms);
    let trees_cutoff = policies
        .iter()
        .find(|policy| policy.kind == Kind::Runs)
        .map(|policy| cutoff(policy.max_age_ms));
    let mut passes: Vec<Pass> = policies
        .into_iter()
        .map(|policy| Pass {
            kind: policy.kind,
            cutoff: cutoff(policy.max_age_ms),
            keep: policy.keep_count.unwrap_or(1).max(1),
            trees_cutoff,
            position: Position::start(),
        })
        .collect();
    passes.sort_by_key(|pass| match pass.kind {
        Kind::ActionIdempotency => 0,
        Kind::SessionEvents => 1,
        Kind::Runs => 2,
        Kind::RunJournal => 3,
    });
    Ok(passes)
}

fn add(into: &mut BTreeMap<&'static str, u64>, tally: Tally) {
    for (table, n) in tally {
        *into.entry(table).or_default() += n;
    }
}

impl Store {
    /// Applies every retention policy ([`Store::set_retention_policy`]) in batches of at most
    /// `options.batch_rows` rows, each its own write, and reports what went; with no policy set
    /// it removes nothing. A dry run counts instead, writing nothing. After a real prune, a file
    /// with `auto_vacuum = INCREMENTAL` gives its free pages back, in bounded steps too.
    ///
    /// # Errors
    /// [`Error::Invalid`] (`options.batch_rows` 0 or over [`MAX_BATCH_ROWS`],
    /// `options.max_batches` 0); [`Error::Busy`]
    /// and [`Error::Sqlite`] from a batch, which leave the batches before it committed (a later
    /// prune continues from there).
    ///
    /// # Examples
    /// ```
    /// use seed_agents_store::prune::PruneOptions;
    /// use seed_agents_store::retention::{Kind, RetentionPolicy};
    /// use seed_agents_store::Store;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let store = Store::open(dir.path().join("agents.sqlite"))?;
    /// assert_eq!(store.prune(&PruneOptions::default())?.total(), 0); // no policy: nothing goes
    /// store.set_retention_policy(Kind::ActionIdempotency, &RetentionPolicy::max_age(86_400_000))?;
    /// let report = store.prune(&PruneOptions { dry_run: true, ..PruneOptions::default() })?;
    /// assert_eq!(report.removed["action_idempotency"], 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// [`Error::Invalid`]: crate::Error::Invalid
    /// [`Error::Busy`]: crate::Error::Busy
    /// [`Error::Sqlite`]: crate::Error::Sqlite
    pub fn prune(&self, options: &PruneOptions) -> Result<PruneReport> {
        if options.batch_rows == 0 || options.batch_rows > MAX_BATCH_ROWS {
            return Err(invalid(
                "options.batch_rows",
                format!(
                    "is {}, and must be from 1 to {MAX_BATCH_ROWS}",
                    options.batch_rows
                ),
            ));
        }
        if options.max_batches == Some(0) {
            return Err(invalid(
                "options.max_batches",
                "must be at least 1 when given",
            ));
        }
        let mut report = PruneReport {
            dry_run: options.dry_run,
            ..PruneReport::default()
        };
        let passes = passes(self)?;
        for pass in &passes {
            report.kinds.push(pass.kind);
            for table in passes::tables(pass.kind) {
                report.removed.entry(table).or_default();
            }
        }
        if options.dry_run {
            // One snapshot for every kind, so the counts agree with each other.
            let conn = self.snapshot()?;
            for pass in &passes {
                add(
                    &mut report.removed,
                    passes::step(&conn.db(), pass, Mode::Count)?.tally,
                );
            }
            return Ok(report);
        }
        let budget = options.batch_rows as i64;
        let mut batches_left = options.max_batches.unwrap_or(u64::MAX);
        'kinds: for mut pass in passes {
            loop {
                if batches_left == 0 {
                    break 'kinds;
                }
                batches_left -= 1;
                let (step, took) =
                    self.write_timed(|tx, _| passes::step(tx, &pass, Mode::Delete { budget }))?;
                report.longest_batch = report.longest_batch.max(took);
                report.batches += 1;
                add(&mut report.removed, step.tally);
                if step.done {
                    break;
                }
                pass.position = step.position;
            }
        }
        report.pages_freed = self.give_back_pages()?;
        Ok(report)
    }

    /// Returns the file's free pages to the file system when its `auto_vacuum` is
    /// `INCREMENTAL`, [`VACUUM_STEP_PAGES`] per write; the number of pages given back (none on
    /// a backend that reuses its free space itself).
    fn give_back_pages(&self) -> Result<u64> {
        let reading = self.reading()?;
        let Some(conn) = reading.db().as_sqlite() else {
            return Ok(0);
        };
        // 2 is INCREMENTAL; NONE (0) cannot give pages back, FULL (1) already did at commit.
        let auto_vacuum: i64 = conn.pragma_query_value(None, "auto_vacuum", |r| r.get(0))?;
        if auto_vacuum != 2 {
            return Ok(0);
        }
        drop(reading);
        let mut freed = 0;
        loop {
            let (before, after) = self.write(|db, _| {
                let Some(tx) = db.as_sqlite() else {
                    return Ok((0, 0));
                };
                let before: i64 = tx.pragma_query_value(None, "freelist_count", |r| r.get(0))?;
                if before > 0 {
                    tx.pragma(None, "incremental_vacuum", VACUUM_STEP_PAGES, |_| Ok(()))?;
                }
                let after: i64 = tx.pragma_query_value(None, "freelist_count", |r| r.get(0))?;
                Ok((before, after))
            })?;
            freed += (before - after).max(0) as u64;
            // Stop when nothing is free, or a step freed nothing (nothing more can be freed).
            if after == 0 || after >= before {
                return Ok(freed);
            }
        }
    }
}
