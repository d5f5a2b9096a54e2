//! The audit log's hash chains, one per account: how a row's hash is computed, how an event is
//! appended at its chain's head, and how the whole log is verified.
//!
//! Invariant: `hash(row) = SHA-256(DOMAIN || prev_hash || seq || at || account_id || actor ||
//! kind || action || target || outcome || detail)`, integers as 8 bytes big-endian, texts as
//! their 8-byte big-endian length then their bytes, `detail` as one byte 0 (absent) or 1 then as a
//! text. The encoding is unambiguous, so two different rows never hash the same bytes. A row's
//! chain is the account it concerns (`''` for the rows written before version 36, one chain
//! over every account). Row `seq` of a chain chains from row `seq - 1` of the same chain, the
//! first retained row from the chain's anchor, and the chain's head in `audit_chain` names its
//! newest row: an edited, moved, deleted or truncated row breaks one of these links. Appends to
//! different chains touch different rows, so they never wait on each other.

use crate::sql::db::{Db, LockedRow};
use sha2::{Digest, Sha256};

use super::Event;
use crate::error::Result;
use crate::schema::audit_events;
use crate::{query, Store};

/// Starts every hashed message, so an audit hash is never mistaken for another SHA-256 use.
const DOMAIN: &[u8] = b"seed-agents-store audit v1\0";
/// The anchor of a log never pruned: the `prev_hash` of row 1.
pub(crate) const GENESIS: [u8; 32] = [0; 32];

/// The two ends of the chain, as `audit_chain` stores them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ends {
    pub(crate) head_seq: i64,
    pub(crate) head_hash: Vec<u8>,
    pub(crate) anchor_seq: i64,
    pub(crate) anchor_hash: Vec<u8>,
}

impl Ends {
    /// The ends of an empty, never pruned log (there is no `audit_chain` row yet).
    fn empty() -> Ends {
        Ends {
            head_seq: 0,
            head_hash: GENESIS.to_vec(),
            anchor_seq: 0,
            anchor_hash: GENESIS.to_vec(),
        }
    }
}

/// The ends of `chain`: its stored row, `None` when there is none.
fn ends(conn: &Db, chain: &str) -> Result<Option<Ends>> {
    Ok(query!(
        "SELECT head_seq, head_hash, anchor_seq, anchor_hash FROM audit_chain WHERE chain = ?1",
        chain
    )
    .fetch_optional(conn)?
    .map(|r| Ends {
        head_seq: r.head_seq,
        head_hash: r.head_hash,
        anchor_seq: r.anchor_seq,
        anchor_hash: r.anchor_hash,
    }))
}

/// Stores the ends of `chain`.
fn store_ends(conn: &Db, chain: &str, ends: &Ends) -> Result<()> {
    query!(
        "INSERT INTO audit_chain (chain, head_seq, head_hash, anchor_seq, anchor_hash) \
         VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (chain) DO UPDATE SET \
         head_seq = excluded.head_seq, head_hash = excluded.head_hash, \
         anchor_seq = excluded.anchor_seq, anchor_hash = excluded.anchor_hash",
        chain,
        ends.head_seq,
        ends.head_hash.as_slice(),
        ends.anchor_seq,
        ends.anchor_hash.as_slice()
    )
    .execute(conn)?;
    Ok(())
}

/// The fields a row's hash covers, borrowed from an event being appended or a row being checked.
/// `kind` and `outcome` are the stored text, so a row edited to a value outside their sets is
/// still hashed (and found edited) rather than refused by decoding.
struct Fields<'a> {
    seq: i64,
    at: i64,
    account_id: &'a str,
    actor: &'a str,
    kind: &'a str,
    action: &'a str,
    target: &'a str,
    outcome: &'a str,
    detail: Option<&'a str>,
}

/// The hash of a row with these fields chaining from `prev_hash`.
fn hash(prev_hash: &[u8], f: &Fields<'_>) -> [u8; 32] {
    let mut h = Sha256::new();
    let text = |h: &mut Sha256, s: &str| {
        h.update((s.len() as u64).to_be_bytes());
        h.update(s.as_bytes());
    };
    h.update(DOMAIN);
    h.update(prev_hash);
    h.update(f.seq.to_be_bytes());
    h.update(f.at.to_be_bytes());
    for s in [f.account_id, f.actor, f.kind, f.action, f.target, f.outcome] {
        text(&mut h, s);
    }
    match f.detail {
        None => h.update([0]),
        Some(d) => {
            h.update([1]);
            text(&mut h, d);
        }
    }
    h.finalize().into()
}

/// The ends of `chain`, its head row locked until the write ends (on PostgreSQL, so that writes
/// to one chain take turns; a no-op on SQLite, whose writes run one at a time).
pub(crate) fn locked_ends(conn: &Db, chain: &str) -> Result<Option<Ends>> {
    conn.lock_row(LockedRow::AuditChain, chain)?;
    ends(conn, chain)
}

/// Appends `event` at the head of `chain`, at time `now`, and moves the head to it. Appends to
/// one chain take turns on its head's row lock; two first appends to a chain, which have no head
/// to lock yet, meet the primary key `(chain, seq)` instead, and the second runs again.
pub(crate) fn append(conn: &Db, now: i64, chain: &str, event: &Event<'_>) -> Result<()> {
    let ends = locked_ends(conn, chain)?.unwrap_or_else(Ends::empty);
    append_at(conn, now, chain, ends, event)
}

/// Appends `event` after the head in `ends` (read with [`locked_ends`] in this write), then
/// stores `ends` with the head moved to it: its anchor too, as the caller left it.
pub(crate) fn append_at(
    conn: &Db,
    now: i64,
    chain: &str,
    mut ends: Ends,
    event: &Event<'_>,
) -> Result<()> {
    let seq = ends.head_seq + 1;
    let fields = Fields {
        seq,
        at: now,
        account_id: &event.account_id,
        actor: event.actor,
        kind: event.kind.as_str(),
        action: event.action,
        target: &event.target,
        outcome: event.outcome.as_str(),
        detail: event.detail.as_deref(),
    };
    let hash = hash(&ends.head_hash, &fields);
    audit_events::insert(
        conn,
        &audit_events::Row {
            chain: chain.to_owned(),
            seq,
            at: now,
            account_id: event.account_id.to_string(),
            actor: event.actor.into(),
            kind: event.kind,
            action: event.action.into(),
            target: event.target.clone(),
            outcome: event.outcome,
            detail: event.detail.clone(),
            prev_hash: std::mem::take(&mut ends.head_hash),
            hash: hash.to_vec(),
        },
    )?;
    ends.head_seq = seq;
    ends.head_hash = hash.to_vec();
    store_ends(conn, chain, &ends)
}

/// What is wrong at one place of the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum ProblemKind {
    /// The row's fields do not hash to its `hash`: it was edited, or moved to another seq.
    Edited,
    /// The row's `prev_hash` is not the previous row's hash (or the anchor's): a row before it
    /// was removed, replaced or moved.
    Unchained,
    /// Rows are missing: `seq` is the first missing one, `missing` how many.
    Missing,
    /// The newest rows are gone: the head names a later row than the newest one left.
    Truncated,
    /// The head names a row whose hash differs from the newest row's, or there are rows but no
    /// head: the newest rows were replaced, or `audit_chain` was edited.
    HeadMismatch,
}

impl ProblemKind {
    /// The kind as a stable snake_case name (`edited`, `unchained`, `missing`, `truncated`,
    /// `head_mismatch`), for machine-readable output.
    pub fn as_str(self) -> &'static str {
        match self {
            ProblemKind::Edited => "edited",
            ProblemKind::Unchained => "unchained",
            ProblemKind::Missing => "missing",
            ProblemKind::Truncated => "truncated",
            ProblemKind::HeadMismatch => "head_mismatch",
        }
    }
}

/// One finding of [`Store::verify_audit_log`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct AuditProblem {
    /// The chain the finding is in: the account it concerns, or `""` for the log written before
    /// version 36.
    pub chain: String,
    /// The seq (within its chain) the finding is about.
    pub seq: i64,
    /// What is wrong there.
    pub kind: ProblemKind,
    /// For [`ProblemKind::Missing`] and [`ProblemKind::Truncated`], how many rows; else 0.
    pub missing: i64,
}

impl std::fmt::Display for AuditProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let seq = self.seq;
        match self.kind {
            ProblemKind::Edited => write!(f, "row {seq} does not match its hash (edited or moved)"),
            ProblemKind::Unchained => write!(
                f,
                "row {seq} does not chain from the row before it (a row was removed, replaced or moved)"
            ),
            ProblemKind::Missing => {
                write!(f, "{} row(s) missing from seq {seq}", self.missing)
            }
            ProblemKind::Truncated => write!(
                f,
                "{} newest row(s) missing from seq {seq} (the head names a later row)",
                self.missing
            ),
            ProblemKind::HeadMismatch => write!(
                f,
                "the chain head does not match row {seq} (the newest rows or audit_chain were changed)"
            ),
        }
    }
}

/// What [`Store::verify_audit_log`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct AuditReport {
    /// Rows read.
    pub rows: u64,
    /// The chains: one per account with events, and `""` for the log written before version 36.
    pub chains: u64,
    /// Rows pruned over the log's life: the sum of every chain's anchor seq (0 before any
    /// pruning). With one chain, the seq its first retained row chains from.
    pub anchor_seq: i64,
    /// Rows appended over the log's life: the sum of every chain's head seq (0 for an empty log).
    /// With one chain, its newest seq.
    pub head_seq: i64,
    /// The heads' fingerprint, hex: with one chain, its newest row's hash; with several, SHA-256
    /// over each chain's name, head seq and head hash in chain order. Keep it elsewhere to detect
    /// a log rewritten with fresh hashes.
    pub head_hash: String,
    /// What is wrong, by chain then seq; empty when the log is intact.
    pub problems: Vec<AuditProblem>,
}

impl AuditReport {
    /// Whether the log is intact.
    pub fn is_intact(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Starts the heads' fingerprint of a log of several chains.
const HEADS_DOMAIN: &[u8] = b"seed-agents-store audit heads v1\0";

/// One chain being walked: its name, stored ends, and the last link seen.
struct Walk {
    chain: String,
    stored: Option<Ends>,
    prev_seq: i64,
    prev_hash: Vec<u8>,
}

impl Walk {
    /// Starts walking `chain` from its anchor.
    fn start(chain: String, stored: Option<Ends>) -> Walk {
        let from = stored.clone().unwrap_or_else(Ends::empty);
        Walk {
            chain,
            stored,
            prev_seq: from.anchor_seq,
            prev_hash: from.anchor_hash,
        }
    }

    /// Checks that the chain's head names its last row, once its rows are walked.
    fn finish(self, problems: &mut Vec<AuditProblem>) {
        let problem = |seq, kind, missing| AuditProblem {
            chain: self.chain.clone(),
            seq,
            kind,
            missing,
        };
        let Some(ends) = &self.stored else {
            problems.push(problem(self.prev_seq, ProblemKind::HeadMismatch, 0));
            return;
        };
        if ends.head_seq > self.prev_seq {
            let missing = ends.head_seq - self.prev_seq;
            problems.push(problem(self.prev_seq + 1, ProblemKind::Truncated, missing));
        } else if ends.head_seq != self.prev_seq || ends.head_hash != self.prev_hash {
            problems.push(problem(self.prev_seq, ProblemKind::HeadMismatch, 0));
        }
    }
}

/// Walks every chain in seq order, checking every link, then every chain's head.
fn verify(conn: &Db) -> Result<AuditReport> {
    let mut problems = Vec::new();
    let mut rows = 0u64;
    let mut walk: Option<Walk> = None;
    // Enum columns read as text: a row edited to a value outside their set is a finding. Each
    // row comes with its chain's stored ends, so a chain's walk starts at its first row.
    query!(
        "SELECT e.chain AS \"chain!\", e.seq AS \"seq!\", e.at AS \"at!\", \
         e.account_id AS \"account_id!\", e.actor AS \"actor!\", CAST(e.kind AS TEXT) AS kind, \
         e.action AS \"action!\", e.target AS \"target!\", CAST(e.outcome AS TEXT) AS outcome, \
         e.detail, e.prev_hash AS \"prev_hash!\", e.hash AS \"hash!\", c.head_seq, c.head_hash, c.anchor_seq, c.anchor_hash \
         FROM audit_events AS e LEFT JOIN audit_chain AS c ON c.chain = e.chain \
         ORDER BY e.chain, e.seq"
    )
    .for_each(conn, |row| {
        rows += 1;
        if walk.as_ref().is_none_or(|w| w.chain != row.chain) {
            if let Some(done) = walk.take() {
                done.finish(&mut problems);
            }
            let stored = match (row.head_seq, row.head_hash, row.anchor_seq, row.anchor_hash) {
                (Some(head_seq), Some(head_hash), Some(anchor_seq), Some(anchor_hash)) => {
                    Some(Ends {
                        head_seq,
                        head_hash,
                        anchor_seq,
                        anchor_hash,
                    })
                }
                _ => None,
            };
            walk = Some(Walk::start(row.chain.clone(), stored));
        }
        let Some(w) = walk.as_mut() else {
            return Ok(());
        };
        let mut problem = |seq, kind, missing| {
            problems.push(AuditProblem {
                chain: row.chain.clone(),
                seq,
                kind,
                missing,
            });
        };
        if row.seq != w.prev_seq + 1 {
            problem(w.prev_seq + 1, ProblemKind::Missing, row.seq - w.prev_seq - 1);
        }
        let fields = Fields {
            seq: row.seq,
            at: row.at,
            account_id: &row.account_id,
            actor: &row.actor,
            kind: row.kind.as_deref().unwrap_or_default(),
            action: &row.action,
            target: &row.target,
            outcome: row.outcome.as_deref().unwrap_or_default(),
            detail: row.detail.as_deref(),
        };
        if hash(&row.prev_hash, &fields).as_slice() != row.hash {
            problem(row.seq, ProblemKind::Edited, 0);
        }
        if row.prev_hash != w.prev_hash {
            problem(row.seq, ProblemKind::Unchained, 0);
        }
        w.prev_seq = row.seq;
        w.prev_hash = row.hash;
        Ok(())
    })?;
    if let Some(done) = walk.take() {
        done.finish(&mut problems);
    }
    // Every head, in chain order: the sums, the fingerprint, and the chains left with no row,
    // whose head must not name one.
    let (mut chains, mut anchor_seq, mut head_seq) = (0u64, 0i64, 0i64);
    let (mut only, mut heads) = (None, Sha256::new());
    heads.update(HEADS_DOMAIN);
    query!(
        "SELECT c.chain, c.head_seq, c.head_hash, c.anchor_seq, c.anchor_hash, \
         CAST(CASE WHEN EXISTS (SELECT 1 FROM audit_events AS e WHERE e.chain = c.chain) \
         THEN 0 ELSE 1 END AS INTEGER) AS \"empty!\" \
         FROM audit_chain AS c ORDER BY c.chain"
    )
    .for_each(conn, |c| {
        chains += 1;
        anchor_seq += c.anchor_seq;
        head_seq += c.head_seq;
        heads.update((c.chain.len() as u64).to_be_bytes());
        heads.update(c.chain.as_bytes());
        heads.update(c.head_seq.to_be_bytes());
        heads.update(&c.head_hash);
        if c.empty == 1 {
            let stored = Ends {
                head_seq: c.head_seq,
                head_hash: c.head_hash.clone(),
                anchor_seq: c.anchor_seq,
                anchor_hash: c.anchor_hash,
            };
            Walk::start(c.chain, Some(stored)).finish(&mut problems);
        }
        only = Some(c.head_hash);
        Ok(())
    })?;
    // Chains with rows but no head row are findings of the walk, not chains of the count.
    problems.sort_by(|a, b| (&a.chain, a.seq).cmp(&(&b.chain, b.seq)));
    let head_hash = match (chains, only) {
        (1, Some(only)) => hex::encode(only),
        (0, _) => hex::encode(GENESIS),
        _ => hex::encode(heads.finalize()),
    };
    Ok(AuditReport {
        rows,
        chains,
        anchor_seq,
        head_seq,
        head_hash,
        problems,
    })
}

impl Store {
    /// Checks every chain of the audit log (one per account) from its anchor to its head, in
    /// one read snapshot: every row's hash, every link, no missing seq, and each head naming its
    /// chain's newest row. Never writes. Reads row by row: its memory does not grow with the log.
    ///
    /// The chain shows a row edited, deleted, reordered or cut from the end without its hashes
    /// recomputed. Someone able to write the file can also recompute every hash; compare
    /// [`AuditReport::head_hash`] with a copy kept elsewhere to detect that.
    ///
    /// # Errors
    /// [`crate::Error::Sqlite`], or a stored value that does not decode (an enum edited to a value
    /// schema.sql does not declare).
    ///
    /// # Examples
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let store = seed_agents_store::Store::open(dir.path().join("agents.sqlite"))?;
    /// store.set_secret("acct-1", "api-key", b"s3cret", None)?;
    /// let report = store.verify_audit_log()?;
    /// assert!(report.is_intact());
    /// assert_eq!(report.head_seq, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn verify_audit_log(&self) -> Result<AuditReport> {
        // One snapshot: the head and the rows read together, whatever commits meanwhile.
        verify(&self.snapshot()?.db())
    }
}
