//! Following a run tree's journals: [`JournalFeed`], for `runs/<rootRunId>` subscribers.
//!
//! Invariant: each run's entries are yielded once, in seq order, from the first; a run that
//! joins the tree later (a child) is followed from its first entry. Runs are visited oldest
//! first, so a replay lists the root's journal before its children's.

use std::collections::HashMap;
use std::time::Duration;

use super::follow::{Follow, Source, PAGE};
use crate::error::{Error, Result};
use crate::journal::JournalRecord;
use crate::{query, Store};

/// One journal entry of a run tree, with the run it belongs to.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeEntry {
    /// The run whose journal holds it (the root or a descendant).
    pub run_id: String,
    /// The entry, its seq within that run's journal.
    pub record: JournalRecord,
}

/// The reads of one tree's journals, from each run's last seq read.
#[derive(Debug)]
pub(crate) struct Journals {
    pub(crate) account: String,
    pub(crate) root: String,
    /// Each run's last seq read.
    pub(crate) after: HashMap<String, i64>,
}

impl Source for Journals {
    type Item = TreeEntry;

    fn read(&mut self, store: &Store) -> Result<Vec<TreeEntry>> {
        let reading = store.reading()?;
        let members = query!(
            "SELECT id FROM runs INDEXED BY runs_by_root WHERE root_run_id = ?2 AND account_id = ?1 ORDER BY created_at, id",
            self.account,
            self.root
        )
        .fetch_all(&reading)?;
        if members.is_empty() {
            return Err(Error::NotFound {
                what: "run",
                id: self.root.clone(),
            });
        }
        let mut out = Vec::new();
        for member in members {
            let left = PAGE as usize - out.len();
            if left == 0 {
                break;
            }
            let after = self.after.get(&member.id).copied().unwrap_or(0);
            let rows = query!(
                "SELECT seq, entry_cbor, created_at FROM run_journal WHERE run_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
                member.id,
                after,
                left as i64
            )
            .fetch_all(&reading)?;
            let Some(last) = rows.last().map(|row| row.seq) else {
                continue;
            };
            for row in rows {
                out.push(TreeEntry {
                    run_id: member.id.clone(),
                    record: JournalRecord {
                        seq: row.seq,
                        entry: row.entry_cbor.decode()?,
                        created_at: row.created_at,
                    },
                });
            }
            self.after.insert(member.id, last);
        }
        Ok(out)
    }
}

/// A run tree's journal entries, replayed from the first, then each new one as it commits: from
/// [`Store::follow_journal`].
///
/// As an [`Iterator`] it yields each entry once (in seq order within its run) and `None` when
/// [`JournalFeed::timeout`] passes with nothing new (iterate again to wait more). When the
/// tree's runs are gone it yields [`Error::NotFound`] once and then ends.
#[derive(Debug)]
pub struct JournalFeed {
    pub(crate) follow: Follow<Journals>,
    timeout: Option<Duration>,
}

impl JournalFeed {
    pub(crate) fn new(follow: Follow<Journals>) -> JournalFeed {
        JournalFeed {
            follow,
            timeout: None,
        }
    }

    /// How long each [`Iterator::next`] waits for a new entry (by default, as long as it takes).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> JournalFeed {
        self.timeout = Some(timeout);
        self
    }

    /// The next entry, waiting at most `timeout` for one to commit: `Ok(None)` when none came.
    ///
    /// # Errors
    /// [`Error::NotFound`] (`run`) once the tree is gone, and for every call after; a read's
    /// error otherwise (the feed stays where it was, so calling again retries).
    pub fn next_within(&mut self, timeout: Duration) -> Result<Option<TreeEntry>> {
        self.follow.next_within(Some(timeout))
    }
}

impl Iterator for JournalFeed {
    type Item = Result<TreeEntry>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.follow.ended.is_some() && self.follow.buffer.is_empty() {
            return None;
        }
        self.follow.next_within(self.timeout).transpose()
    }
}
