//! Waits and signals (`run_event_waits`): what a parked run listens for, and the exactly-once
//! delivery that wakes it.
//!
//! Invariant: a wait is resolved at most once. Delivery (a signal, an activity event, or a
//! timeout) is one `BEGIN IMMEDIATE` transaction that checks the wait row still exists and its
//! run is still waiting, journals the `event` entry through the journal's one allocator, requeues
//! the run and deletes every wait of the run. Whichever of signal, timeout or cancel commits first
//! deletes the wait rows, so the others find nothing, write nothing, and say so.
//!
//! The journaled resolution has the TypeScript server's shape: `{kind: 'event', callSeq, key?,
//! waitId, delivery?}`, with the `callSeq` and `key` of the `wait` entry that registered it, and
//! `delivery: {source, signal?, payload?}` (`source` is `signal`, `activity` or `trigger`);
//! a timeout journals no `delivery` at all. Only a run parked on an `event` wait is delivered to.
//!
//! Match rules ([`matches_signal`], [`matches_activity`]): a `signal` matches that exact signal;
//! a match with neither a signal nor activity criteria matches any signal; activity criteria
//! never match a signal; activity criteria (`eventType`, `resource`, `author`, each optional)
//! match an activity event when every present one is equal, resources compared without their
//! version and query.

use crate::sql::db::Db;

use crate::error::{Error, Result};
use crate::journal::{append_in_tx, Appended};
use crate::lease::{fence, Claim};
use crate::payload::{
    Ipld, JournalEntryBody, OpenMap, RunWait, RunWaitEvent, WaitMatch, WorkflowJournalEntry,
};
use crate::runs::lifecycle::{delete_waits, load_run, park_in_tx, requeue_waiting};
use crate::schema::run_event_waits;
use crate::schema::runs::{self, Status};
use crate::values::cbor::Cbor;
use crate::values::check::non_empty;
use crate::{query, Store};

/// Waits whose timeout is due, oldest timeout first. ?1 now.
macro_rules! timeout_sweep_query {
    ($now:expr) => {
        query!(
            "SELECT account_id, run_id, wait_id FROM run_event_waits INDEXED BY run_event_waits_by_timeout
     WHERE timeout_at <= ?1 ORDER BY timeout_at",
            $now
        )
    };
}

/// The checked SQL of the timeout sweep, for the query-plan registry
/// ([`crate::execution::plans`]).
pub(crate) fn timeout_sweep_sql() -> &'static str {
    timeout_sweep_query!(0_i64).sql()
}

/// An event of the activity feed, offered to activity waits.
#[derive(Debug, Clone, PartialEq)]
pub struct ActivityEvent {
    /// The event type.
    pub event_type: String,
    /// The resource it concerns (an `hm://` URL; version and query are ignored when matching).
    pub resource: String,
    /// Its author.
    pub author: String,
    /// What is journaled as the delivery's `payload`: the feed event as the server received it.
    /// `None` journals `{eventType, resource, author}` instead.
    pub payload: Option<Ipld>,
}

/// Who answered a wait: the `source` of the journaled delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliverySource {
    /// A person or the system signalled the run (SignalRun).
    Signal,
    /// A trigger's `wake` continuation.
    Trigger,
}

impl DeliverySource {
    fn as_str(self) -> &'static str {
        match self {
            DeliverySource::Signal => "signal",
            DeliverySource::Trigger => "trigger",
        }
    }
}

/// A wait resolved by a delivery or a timeout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivered {
    /// The run, now queued again.
    pub run_id: String,
    /// The wait that was resolved.
    pub wait_id: String,
    /// The seq of the journal's `event` entry.
    pub seq: i64,
}

/// What a signal delivery did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignalOutcome {
    /// Delivered: journaled, run requeued, its waits deleted.
    Delivered(Delivered),
    /// No waiting run had a matching wait (none registered, already delivered, timed out or
    /// canceled): nothing was written.
    NotDelivered,
}

/// The criteria a [`WaitMatch`] holds, whatever variant it decoded as.
#[derive(Debug, Default)]
struct Criteria<'a> {
    signal: Option<&'a str>,
    event_type: Option<&'a str>,
    resource: Option<&'a str>,
    author: Option<&'a str>,
}

impl Criteria<'_> {
    fn has_activity(&self) -> bool {
        self.event_type.is_some() || self.resource.is_some() || self.author.is_some()
    }
}

fn criteria(m: &WaitMatch) -> Criteria<'_> {
    fn text<'a>(map: &'a OpenMap, key: &str) -> Option<&'a str> {
        match map.get(key) {
            Some(Ipld::String(s)) => Some(s),
            _ => None,
        }
    }
    match m {
        WaitMatch::Signal(s) => Criteria {
            signal: Some(&s.signal),
            ..Criteria::default()
        },
        WaitMatch::Activity(a) => Criteria {
            signal: None,
            event_type: Some(&a.event_type),
            resource: Some(&a.resource),
            author: Some(&a.author),
        },
        WaitMatch::Other(map) => Criteria {
            signal: text(map, "signal"),
            event_type: text(map, "eventType"),
            resource: text(map, "resource"),
            author: text(map, "author"),
        },
    }
}

/// A resource without its version and query (`hm://a/doc?v=bafy..#frag` is `hm://a/doc`).
pub fn resource_base(resource: &str) -> &str {
    let end = resource.find(['?', '#']).unwrap_or(resource.len());
    &resource[..end]
}

/// Whether a wait with criteria `m` is answered by the signal `signal`.
pub fn matches_signal(m: &WaitMatch, signal: &str) -> bool {
    let c = criteria(m);
    match c.signal {
        Some(wanted) => wanted == signal,
        None => !c.has_activity(),
    }
}

/// Whether a wait with criteria `m` is answered by the activity event `event`.
pub fn matches_activity(m: &WaitMatch, event: &ActivityEvent) -> bool {
    let c = criteria(m);
    if c.signal.is_some() || !c.has_activity() {
        return false;
    }
    c.event_type.is_none_or(|t| t == event.event_type)
        && c.author.is_none_or(|a| a == event.author)
        && c.resource
            .is_none_or(|r| resource_base(r) == resource_base(&event.resource))
}

/// The `callSeq` and `key` of the journal's `wait` entry registering `wait_id` (its `waitId`
/// field), else `wait_id` read as a number (or 0) and no key.
fn registration(conn: &Db, run_id: &str, wait_id: &str) -> Result<(u64, Option<String>)> {
    // Newest first, one entry per step (the registering entry is normally among the last), so
    // the journal is never read further back than needed.
    let mut before = i64::MAX;
    while let Some(row) = query!(
        "SELECT seq, entry_cbor FROM run_journal WHERE run_id = ?1 AND seq < ?2 ORDER BY seq DESC LIMIT 1",
        run_id,
        before
    )
    .fetch_optional(conn)?
    {
        before = row.seq;
        if let Ok(WorkflowJournalEntry::Wait(body)) = row.entry_cbor.decode() {
            if matches!(body.extra.get("waitId"), Some(Ipld::String(id)) if id == wait_id) {
                return Ok((body.call_seq, body.key));
            }
        }
    }
    Ok((wait_id.parse().unwrap_or(0), None))
}

/// Whether `run` is parked on an `event` wait (the only wait a delivery may answer).
fn parked_on_event(run: &runs::Row) -> Result<bool> {
    if run.status != Status::Waiting {
        return Ok(false);
    }
    Ok(
        match run.wait_cbor.as_ref().map(Cbor::decode).transpose()? {
            Some(RunWait::Event(_)) => true,
            Some(RunWait::Other(map)) => {
                matches!(map.get("reason"), Some(Ipld::String(r)) if r == "event")
            }
            _ => false,
        },
    )
}

/// Resolves the wait `(run_id, wait_id)` inside the caller's IMMEDIATE transaction: journals an
/// `event` entry carrying `delivery` (none for a timeout), requeues the run, deletes its waits.
/// `None` (nothing written) when the wait is gone or its run is not parked on an event wait.
pub(crate) fn resolve_wait(
    conn: &Db,
    account_id: &str,
    run_id: &str,
    wait_id: &str,
    delivery: Option<OpenMap>,
    now: i64,
) -> Result<Option<Delivered>> {
    if run_event_waits::get(conn, account_id, run_id, wait_id)?.is_none() {
        return Ok(None);
    }
    let mut run = load_run(conn, account_id, run_id)?;
    if !parked_on_event(&run)? {
        return Ok(None);
    }
    let (call_seq, key) = registration(conn, run_id, wait_id)?;
    let mut fields = OpenMap::new();
    fields.insert("waitId".into(), Ipld::String(wait_id.to_owned()));
    if let Some(delivery) = delivery {
        fields.insert("delivery".into(), Ipld::Map(delivery));
    }
    let entry = WorkflowJournalEntry::Event(JournalEntryBody {
        call_seq,
        key,
        extra: fields,
    });
    match append_in_tx(conn, account_id, run_id, &entry, now)? {
        Appended::Seq(seq) => {
            delete_waits(conn, run_id)?;
            requeue_waiting(conn, &mut run, now)?;
            Ok(Some(Delivered {
                run_id: run_id.to_owned(),
                wait_id: wait_id.to_owned(),
                seq,
            }))
        }
        // The run failed with journal-cap (its waits went with it): nothing was delivered.
        Appended::Capped { .. } => Ok(None),
    }
}

/// Upserts a wait inside the caller's transaction, keeping `created_at` of an existing row.
fn upsert_wait(
    conn: &Db,
    run: &runs::Row,
    wait_id: &str,
    criteria: &WaitMatch,
    timeout_at: Option<i64>,
    now: i64,
) -> Result<()> {
    let criteria = Cbor::encode(criteria)?;
    query!(
        "INSERT INTO run_event_waits (run_id, wait_id, account_id, match_cbor, timeout_at, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (run_id, wait_id) DO UPDATE SET match_cbor = excluded.match_cbor, timeout_at = excluded.timeout_at",
        run.id,
        wait_id,
        run.account_id,
        criteria,
        timeout_at,
        now
    )
    .execute(conn)?;
    Ok(())
}

impl Store {
    /// Registers (or re-registers, keeping `created_at`) a wait of the claimed run.
    ///
    /// # Errors
    /// [`Error::Invalid`] for an empty wait id, [`Error::LeaseLost`] when `claim` no longer
    /// holds the run, [`Error::NotFound`] when it is not in the account.
    pub fn register_wait(
        &self,
        claim: &Claim,
        wait_id: &str,
        criteria: &WaitMatch,
        timeout_at: Option<i64>,
    ) -> Result<run_event_waits::Row> {
        non_empty("wait_id", wait_id)?;
        self.write(|tx, now| {
            let run = fence(tx, claim)?;
            upsert_wait(tx, &run, wait_id, criteria, timeout_at, now)?;
            let row =
                run_event_waits::get(tx, &run.account_id, &run.id, wait_id)?.ok_or_else(|| {
                    Error::NotFound {
                        what: "wait",
                        id: wait_id.to_owned(),
                    }
                })?;
            Ok(row)
        })
    }

    /// `ctx.waitForEvent` in one transaction: registers the wait `wait.wait_id` with `criteria`
    /// and parks the claimed run on `wait` (`not_before` = its `timeoutAt`), so no delivery can
    /// fall between the two.
    ///
    /// # Errors
    /// As [`Store::register_wait`] and [`Store::park_run`].
    pub fn park_for_event(
        &self,
        claim: &Claim,
        wait: &RunWaitEvent,
        criteria: &WaitMatch,
    ) -> Result<runs::Row> {
        non_empty("wait.wait_id", &wait.wait_id)?;
        self.write(|tx, now| {
            let parked = park_in_tx(tx, claim, &RunWait::Event(wait.clone()), now)?;
            upsert_wait(tx, &parked, &wait.wait_id, criteria, wait.timeout_at, now)?;
            Ok(parked)
        })
    }

    /// The outstanding waits of a run.
    ///
    /// # Errors
    /// [`Error::Sqlite`] or a decode error.
    pub fn run_waits(&self, account_id: &str, run_id: &str) -> Result<Vec<run_event_waits::Row>> {
        run_event_waits::list_by_run_id(&self.reading()?, account_id, run_id)
    }

    /// Delivers `signal` (with `payload`) to the oldest matching wait of a run parked on an
    /// event wait: of `run_id` when given, else of any run of the account. One transaction:
    /// journal `event` entry (`delivery: {source, signal, payload?}`), run requeued, every wait
    /// of the run deleted. `source` says who signals: a person or the system, or a trigger's
    /// `wake` continuation.
    ///
    /// # Errors
    /// [`Error::Sqlite`] or a decode error; a delivery that finds nothing is
    /// [`SignalOutcome::NotDelivered`], not an error.
    pub fn deliver_signal(
        &self,
        account_id: &str,
        run_id: Option<&str>,
        source: DeliverySource,
        signal: &str,
        payload: Option<Ipld>,
    ) -> Result<SignalOutcome> {
        self.write(|tx, now| {
            let waits = match run_id {
                Some(run_id) => run_event_waits::list_by_run_id(tx, account_id, run_id)?,
                None => run_event_waits::list_by_account_id(tx, account_id)?,
            };
            let mut outcome = SignalOutcome::NotDelivered;
            for wait in waits {
                if !matches_signal(&wait.match_cbor.decode()?, signal) {
                    continue;
                }
                let mut delivery = OpenMap::new();
                delivery.insert("source".into(), Ipld::String(source.as_str().to_owned()));
                delivery.insert("signal".into(), Ipld::String(signal.to_owned()));
                if let Some(payload) = &payload {
                    delivery.insert("payload".into(), payload.clone());
                }
                if let Some(done) = resolve_wait(
                    tx,
                    account_id,
                    &wait.run_id,
                    &wait.wait_id,
                    Some(delivery),
                    now,
                )? {
                    outcome = SignalOutcome::Delivered(done);
                    break;
                }
            }
            Ok(outcome)
        })
    }

    /// Offers an activity event to every wait of the account: each waiting run with a matching
    /// wait is resolved once. Returns the deliveries (empty when nothing matched; nothing is then
    /// written).
    ///
    /// # Errors
    /// [`Error::Sqlite`] or a decode error.
    pub fn deliver_activity(
        &self,
        account_id: &str,
        event: &ActivityEvent,
    ) -> Result<Vec<Delivered>> {
        self.write(|tx, now| {
            let waits = run_event_waits::list_by_account_id(tx, account_id)?;
            let mut delivered: Vec<Delivered> = Vec::new();
            for wait in waits {
                if delivered.iter().any(|d| d.run_id == wait.run_id) {
                    continue;
                }
                if !matches_activity(&wait.match_cbor.decode()?, event) {
                    continue;
                }
                let payload = event.payload.clone().unwrap_or_else(|| {
                    let mut activity = OpenMap::new();
                    activity.insert("eventType".into(), Ipld::String(event.event_type.clone()));
                    activity.insert("resource".into(), Ipld::String(event.resource.clone()));
                    activity.insert("author".into(), Ipld::String(event.author.clone()));
                    Ipld::Map(activity)
                });
                let mut delivery = OpenMap::new();
                delivery.insert("source".into(), Ipld::String("activity".into()));
                delivery.insert("payload".into(), payload);
                if let Some(done) = resolve_wait(
                    tx,
                    account_id,
                    &wait.run_id,
                    &wait.wait_id,
                    Some(delivery),
                    now,
                )? {
                    delivered.push(done);
                }
            }
            Ok(delivered)
        })
    }

    /// Times out every wait whose `timeout_at` is due (through `run_event_waits_by_timeout`), in
    /// all accounts: each journals an `event` entry without payload, requeues its run and deletes
    /// the run's waits. Returns what timed out.
    ///
    /// # Errors
    /// [`Error::Sqlite`] or a decode error.
    pub fn sweep_wait_timeouts(&self) -> Result<Vec<Delivered>> {
        self.write(|tx, now| {
            let due = timeout_sweep_query!(now).fetch_all(tx)?;
            let mut timed_out = Vec::new();
            for wait in due {
                if let Some(done) =
                    resolve_wait(tx, &wait.account_id, &wait.run_id, &wait.wait_id, None, now)?
                {
                    timed_out.push(done);
                }
            }
            Ok(timed_out)
        })
    }
}
