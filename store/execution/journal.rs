//! The workflow journal (`run_journal`): the append-only effect log that makes replay-from-top
//! resume safe, and the replay matcher that reads it back.
//!
//! Invariants, kept inside the appending `BEGIN IMMEDIATE` transaction by the one allocator
//! (`append_in_tx`) that every path uses (plain appends, signal and activity delivery, wait
//! timeouts):
//!
//! - `seq` is the count of the run's entries plus one, so it is contiguous from 1;
//! - a run's journal never passes [`MAX_ENTRIES`] entries or [`MAX_BYTES`] bytes: the append that
//!   would is refused and the run fails with code `journal-cap` in the same transaction;
//! - a terminal run's journal is closed.
//!
//! Replay matches by key, consuming each key's groups first-in first-out ([`ReplayMatcher`]), never
//! by arrival order: continuation order after `ctx.parallel` depends on real completion timing.

use std::collections::{BTreeMap, HashMap, VecDeque};

use crate::feed::topic::Topic;
use crate::sql::db::{Db, LockedRow};

use crate::error::{Error, Result};
use crate::lease::Claim;
use crate::payload::{RunErrorInfo, WorkflowJournalEntry};
use crate::runs::lifecycle::{load_run, terminate};
use crate::schema::run_journal;
use crate::schema::runs::Status;
use crate::values::cbor::Cbor;
use crate::{query, Store};

/// At most this many journal entries per run.
pub const MAX_ENTRIES: i64 = 5_000;
/// At most this many bytes of journal entries (their CBOR) per run: 8 MiB.
pub const MAX_BYTES: i64 = 8 * 1024 * 1024;
/// The error code of a run failed by the journal cap.
pub const JOURNAL_CAP_CODE: &str = "journal-cap";
/// The error message of a run failed by the journal cap (the sizes are in [`Error::JournalCap`]).
pub const JOURNAL_CAP_MESSAGE: &str =
    "Workflow journal cap reached; split the work into smaller workflows";

/// A run's journal size: entries and bytes, and its tree's root (whose subscribers an append
/// wakes). ?1 run.
macro_rules! journal_size_query {
    ($run:expr) => {
        query!(
            "SELECT (SELECT r.root_run_id FROM runs r WHERE r.id = ?1) AS \"root?\", CAST(count(*) AS INTEGER) AS entries, CAST(coalesce(sum(length(entry_cbor)), 0) AS INTEGER) AS bytes FROM run_journal WHERE run_id = ?1",
            $run
        )
    };
}

/// The checked SQL of the journal size statement, for the query-plan registry
/// ([`crate::execution::plans`]).
pub(crate) fn journal_size_sql() -> &'static str {
    journal_size_query!("").sql()
}

/// One stored journal entry.
#[derive(Debug, Clone, PartialEq)]
pub struct JournalRecord {
    /// Its position in the run's journal, from 1.
    pub seq: i64,
    /// The entry.
    pub entry: WorkflowJournalEntry,
    /// When it was appended, epoch milliseconds.
    pub created_at: i64,
}

/// What [`append_in_tx`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Appended {
    /// Appended at this seq.
    Seq(i64),
    /// Refused by the cap; the run is now failed (`journal-cap`). The caller commits, then
    /// reports [`Error::JournalCap`].
    Capped {
        /// Entries held.
        entries: i64,
        /// Bytes held.
        bytes: i64,
    },
}

impl Appended {
    /// The seq, or [`Error::JournalCap`] for `run_id`.
    pub(crate) fn seq(self, run_id: &str) -> Result<i64> {
        match self {
            Appended::Seq(seq) => Ok(seq),
            Appended::Capped { entries, bytes } => Err(Error::JournalCap {
                run_id: run_id.to_owned(),
                entries,
                bytes,
            }),
        }
    }
}

/// The one seq allocator and cap check. Appends `entry` to `run`'s journal inside the caller's
/// (IMMEDIATE) transaction, or fails the run with `journal-cap` when the entry would pass a cap.
pub(crate) fn append_in_tx(
    conn: &Db,
    account_id: &str,
    run_id: &str,
    entry: &WorkflowJournalEntry,
    now: i64,
) -> Result<Appended> {
    let entry_cbor = Cbor::encode(entry)?;
    let size = journal_size_query!(run_id).fetch_one(conn)?;
    if let Some(root) = size.root {
        conn.notify(Topic::RunTree(root))?;
    }
    // An aggregate without GROUP BY always returns one row, never NULL here.
    let (entries, bytes) = (size.entries.unwrap_or(0), size.bytes.unwrap_or(0));
    let size = i64::try_from(entry_cbor.as_bytes().len()).unwrap_or(i64::MAX);
    if entries + 1 > MAX_ENTRIES || bytes.saturating_add(size) > MAX_BYTES {
        // The TypeScript server's words, so both write the same error bytes.
        let error = RunErrorInfo::new(JOURNAL_CAP_CODE, JOURNAL_CAP_MESSAGE);
        // Only the rare capped append needs the whole row.
        let mut run = load_run(conn, account_id, run_id)?;
        terminate(conn, &mut run, Status::Failed, None, Some(error), now)?;
        return Ok(Appended::Capped { entries, bytes });
    }
    let seq = entries + 1;
    run_journal::insert(
        conn,
        &run_journal::Row {
            run_id: run_id.to_owned(),
            seq,
            entry_cbor,
            created_at: now,
        },
    )?;
    Ok(Appended::Seq(seq))
}

impl Store {
    /// Appends `entry` to the journal of the claimed run and returns its seq (count + 1).
    ///
    /// # Errors
    /// [`Error::JournalCap`] when the entry would pass 5,000 entries or 8 MiB (the run is then
    /// failed with `journal-cap` and nothing is appended), [`Error::LeaseLost`] when `claim` no
    /// longer holds the run, [`Error::NotFound`] when it is not in the account.
    pub fn append_journal(&self, claim: &Claim, entry: &WorkflowJournalEntry) -> Result<i64> {
        // Committed even when capped: the run's failure is part of the outcome. On PostgreSQL
        // it runs under the run's row lock, so appends to one journal run in turn and the
        // count read is the last committed; other runs' appends go on.
        let appended = self.write_locking(|tx, now| {
            tx.lock_row(LockedRow::Run, &claim.run_id)?;
            // The lease alone decides; the hot path never decodes the whole row.
            let lease = query!(
                "SELECT status, lease_owner, attempt FROM runs WHERE account_id = ?1 AND id = ?2",
                claim.account_id,
                claim.run_id
            )
            .fetch_optional(tx)?
            .ok_or_else(|| Error::NotFound {
                what: "run",
                id: claim.run_id.clone(),
            })?;
            if !claim.holds_lease(lease.status, lease.lease_owner.as_deref(), lease.attempt) {
                return Err(claim.lost());
            }
            append_in_tx(tx, &claim.account_id, &claim.run_id, entry, now)
        })?;
        appended.seq(&claim.run_id)
    }

    /// The journal entries of a run with `seq > after_seq`, in order (0 for all).
    ///
    /// # Errors
    /// [`Error::NotFound`] when the run is not in the account, [`Error::Cbor`] for an entry that
    /// does not decode.
    pub fn load_journal(
        &self,
        account_id: &str,
        run_id: &str,
        after_seq: i64,
    ) -> Result<Vec<JournalRecord>> {
        load_run(&self.reading()?.db(), account_id, run_id)?;
        query!(
            "SELECT seq, entry_cbor, created_at FROM run_journal WHERE run_id = ?1 AND seq > ?2 ORDER BY seq",
            run_id,
            after_seq
        )
        .fetch_all(&self.reading()?)?
        .into_iter()
        .map(|row| {
            Ok(JournalRecord {
                seq: row.seq,
                entry: row.entry_cbor.decode()?,
                created_at: row.created_at,
            })
        })
        .collect()
    }
}

/// The entries of one ctx call: same `callSeq`, keyed by the first entry's key.
#[derive(Debug, Clone, PartialEq)]
pub struct JournalGroup {
    /// The call's `callSeq`.
    pub call_seq: u64,
    /// The effect's content key (from the group's first entry that has one).
    pub key: Option<String>,
    /// The group's entries, in seq order.
    pub entries: Vec<JournalRecord>,
}

/// Replays a journal by key: [`ReplayMatcher::take`] hands out a key's groups first-in
/// first-out, whatever order their results arrived in, and [`ReplayMatcher::unconsumed`] lists
/// what replay never asked for (logged as a warning when the run succeeds).
#[derive(Debug, Clone, Default)]
pub struct ReplayMatcher {
    by_key: HashMap<String, VecDeque<JournalGroup>>,
    /// Keyless groups (logs and the like): never matched, never reported.
    keyless: Vec<JournalGroup>,
}

impl ReplayMatcher {
    /// Groups `records` by `callSeq` (groups ordered by their first seq) and indexes them by key.
    pub fn new(records: impl IntoIterator<Item = JournalRecord>) -> Self {
        let mut groups: BTreeMap<u64, JournalGroup> = BTreeMap::new();
        let mut first_seq: HashMap<u64, i64> = HashMap::new();
        let mut orphans = Vec::new();
        for record in records {
            let Some(call_seq) = record.entry.call_seq() else {
                orphans.push(JournalGroup {
                    call_seq: 0,
                    key: record.entry.key().map(str::to_owned),
                    entries: vec![record],
                });
                continue;
            };
            first_seq.entry(call_seq).or_insert(record.seq);
            let group = groups.entry(call_seq).or_insert_with(|| JournalGroup {
                call_seq,
                key: None,
                entries: Vec::new(),
            });
            if group.key.is_none() {
                group.key = record.entry.key().map(str::to_owned);
            }
            group.entries.push(record);
        }
        let mut ordered: Vec<JournalGroup> = groups.into_values().collect();
        ordered.sort_by_key(|g| first_seq.get(&g.call_seq).copied().unwrap_or(i64::MAX));
        let mut matcher = ReplayMatcher::default();
        for group in ordered.into_iter().chain(orphans) {
            match group.key.clone() {
                Some(key) => matcher.by_key.entry(key).or_default().push_back(group),
                None => matcher.keyless.push(group),
            }
        }
        matcher
    }

    /// The oldest unconsumed group journaled under `key`, or `None` (the effect runs fresh).
    pub fn take(&mut self, key: &str) -> Option<JournalGroup> {
        self.by_key.get_mut(key)?.pop_front()
    }

    /// The groups replay never took, ordered by their first seq.
    pub fn unconsumed(&self) -> Vec<&JournalGroup> {
        let mut left: Vec<&JournalGroup> = self.by_key.values().flatten().collect();
        left.sort_by_key(|g| g.entries.first().map_or(i64::MAX, |e| e.seq));
        left
    }
}
