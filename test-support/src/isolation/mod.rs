//! The frame of the account isolation probes (`tests/account_isolation.rs`): the ids of one
//! account's rows, the snapshot of every table, and the probe that runs one call twice (naming
//! the other account's rows, then rows nobody has) and compares answers and tables. The audit
//! log is the one place a probe may write: naming A's row may append `access.refused` events
//! (by B, under A), naming a missing row appends nothing, and the snapshot leaves the log out.

/// `Case(name, expected answer, |store, ids naming A's rows or missing ones, B's ids| call)`.
#[macro_export]
macro_rules! case {
    ($name:literal, $expect:literal, |$s:pat_param, $a:pat_param, $b:pat_param| $call:expr) => {
        $crate::isolation::Case($name, $expect, |$s, $a, $b| {
            $crate::isolation::outcome($call)
        })
    };
}

use crate::backend;
pub mod setup;
pub mod worker;

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;

use seed_agents_store::clock::ManualClock;
use seed_agents_store::{Error, Result, Store};

/// The account whose rows are probed.
pub const A: &str = "acct-a";
/// The account that probes.
pub const B: &str = "acct-b";
/// Collaborates on both accounts' agents (accepted), so collaborator rows exist.
pub const C: &str = "acct-c";
/// Invited to both accounts' agents (pending).
pub const D: &str = "acct-d";
/// The clock's start.
pub const T: i64 = 1_764_000_000_000;

/// Everything of one account the probes name. [`Ids::missing`] is the same shape naming rows
/// nobody has.
// Each field is the id (or value) its name says.
#[allow(missing_docs)]
#[derive(Debug, Clone)]
pub struct Ids {
    pub agent: String,
    pub session: String,
    pub child_session: String,
    pub successor_session: String,
    pub continuation_call: String,
    pub queued_run: String,
    pub running_run: String,
    pub waiting_run: String,
    pub parent_run: String,
    pub child_call: String,
    pub paused_run: String,
    pub firing_run: String,
    pub schedule_trigger: String,
    pub webhook_trigger: String,
    pub activity_trigger: String,
    pub other_activity_trigger: String,
    pub firing: String,
    pub draft: String,
    pub provider: String,
    pub provider_name: String,
    pub secret: String,
    pub mcp_server: String,
    pub watermark_url: String,
    pub lambda: String,
    pub client_id: String,
    pub signer: String,
    pub wait: String,
    // Not ids: what a caller would present along with them.
    pub signal: String,
    pub lease_owner: String,
    pub webhook_secret: String,
}

impl Ids {
    /// The same request naming nothing that exists (values that are not ids are kept).
    pub fn missing(&self) -> Ids {
        let m = |what: &str| format!("missing-{what}");
        Ids {
            agent: m("agent"),
            session: m("session"),
            child_session: m("child-session"),
            successor_session: m("successor-session"),
            continuation_call: m("continuation-call"),
            queued_run: m("queued-run"),
            running_run: m("running-run"),
            waiting_run: m("waiting-run"),
            parent_run: m("parent-run"),
            child_call: m("child-call"),
            paused_run: m("paused-run"),
            firing_run: m("firing-run"),
            schedule_trigger: m("schedule-trigger"),
            webhook_trigger: m("webhook-trigger"),
            activity_trigger: m("activity-trigger"),
            other_activity_trigger: m("other-activity-trigger"),
            firing: m("firing"),
            draft: m("draft"),
            provider: m("provider"),
            provider_name: m("provider-name"),
            secret: m("secret"),
            mcp_server: m("mcp"),
            watermark_url: m("https://missing.example"),
            lambda: m("lambda"),
            client_id: m("client-id"),
            signer: m("signer"),
            wait: m("wait"),
            ..self.clone()
        }
    }
}

/// Every table but the audit log's, every row, every column, rendered and sorted.
pub fn snapshot(store: &Store) -> BTreeMap<String, Vec<String>> {
    let tables = backend::dump(store.path(), "audit_");
    assert!(tables.len() >= 20, "the schema lists {:?}", tables.keys());
    tables
}

/// The audit log's events as `(account, actor, action, outcome)`, oldest first.
pub fn audit_log(store: &Store) -> Vec<(String, String, String, String)> {
    seed_agents_store::query!(
        "SELECT account_id, actor, action, outcome FROM audit_events ORDER BY seq"
    )
    .fetch_all(&store.reading().unwrap())
    .unwrap()
    .into_iter()
    .map(|r| {
        (
            r.account_id,
            r.actor,
            r.action,
            r.outcome.as_str().to_owned(),
        )
    })
    .collect()
}

/// What a call answered, with the id left out of a `NotFound` (it is the id the call named).
pub fn outcome<T: Debug>(result: Result<T>) -> String {
    match result {
        Err(Error::NotFound { what, .. }) => format!("NotFound({what})"),
        Err(e) => format!("Err({e:?})"),
        Ok(v) => format!("Ok({v:?})"),
    }
}

/// One call B makes, naming the rows in the first `Ids` (A's, or missing ones), with B's own
/// rows (the second) where the request also names some.
pub type Call = fn(&mut Store, &Ids, &Ids) -> String;

/// A probe: its name, what it must answer (for A's rows and for missing ones alike), the call.
pub struct Case(pub &'static str, pub &'static str, pub Call);

/// Runs `case` naming A's rows, then naming missing rows: both answers must be `expect`, and
/// no table may change. Returns a description of what went wrong, if anything.
pub fn probe(store: &mut Store, a: &Ids, b: &Ids, case: &Case) -> Option<String> {
    let Case(name, expect, call) = case;
    let before = snapshot(store);
    let audit_before = audit_log(store).len();
    let foreign = call(store, a, b);
    let after_foreign = snapshot(store);
    let audit_foreign = audit_log(store);
    let missing = call(store, &a.missing(), b);
    let after_missing = snapshot(store);
    let audit_missing = audit_log(store);
    let changed = |after: &BTreeMap<String, Vec<String>>| -> Vec<String> {
        after
            .iter()
            .filter(|(table, rows)| before.get(*table) != Some(rows))
            .map(|(table, _)| table.clone())
            .collect()
    };
    let mut problems = Vec::new();
    if foreign != *expect {
        problems.push(format!(
            "naming A's rows answered {foreign}, expected {expect}"
        ));
    }
    if missing != *expect {
        problems.push(format!(
            "naming missing rows answered {missing}, expected {expect}"
        ));
    }
    let (wrote_foreign, wrote_missing) = (changed(&after_foreign), changed(&after_missing));
    if !wrote_foreign.is_empty() {
        problems.push(format!("naming A's rows changed {wrote_foreign:?}"));
    }
    if !wrote_missing.is_empty() {
        problems.push(format!("naming missing rows changed {wrote_missing:?}"));
    }
    let refusal = (
        A.into(),
        B.into(),
        "access.refused".into(),
        "refused".into(),
    );
    if audit_foreign[audit_before..].iter().any(|e| *e != refusal) {
        problems.push(format!(
            "naming A's rows logged {:?}",
            &audit_foreign[audit_before..]
        ));
    }
    if audit_missing.len() != audit_foreign.len() {
        problems.push("naming missing rows wrote to the audit log".into());
    }
    (!problems.is_empty()).then(|| format!("{name}: {}", problems.join("; ")))
}

/// Two accounts with every kind of row; B probes A. The clock moves first, so a write that only
/// touched a timestamp would show too.
pub fn world() -> (tempfile::TempDir, Store, Ids, Ids) {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T);
    let mut store = Store::open_with_clock(
        backend::location(dir.path(), "db.sqlite"),
        Arc::new(clock.clone()),
    )
    .unwrap();
    let a = setup::populate(&mut store, A, "a");
    let b = setup::populate(&mut store, B, "b");
    clock.advance(60_000);
    (dir, store, a, b)
}

/// Runs every case (see [`probe`]); then the audit log must verify and hold a refusal of B for
/// each of A's rows `refused` names (`agent`, `session`, `trigger` (the schedule trigger), `run`
/// (the running run), `model provider`).
pub fn run_cases(cases: &[Case], refused: &[&str]) {
    let (_dir, mut store, a, b) = world();
    let start = snapshot(&store);
    for table in [
        "session_events",
        "runs",
        "run_journal",
        "run_event_waits",
        "trigger_firings",
        "trigger_event_claims",
        "tool_documents",
        "agent_collaborators",
        "session_continuations",
        "action_idempotency",
        "activity_watermarks",
        "webhook_trigger_credentials",
    ] {
        assert!(
            start.get(table).is_some_and(|rows| rows.len() >= 2),
            "setup left {table} without rows of both accounts"
        );
    }
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| probe(&mut store, &a, &b, case))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} calls leak across accounts:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    assert_eq!(snapshot(&store), start);
    assert!(store.verify_audit_log().unwrap().is_intact());
    for what in refused {
        let id = match *what {
            "agent" => &a.agent,
            "session" => &a.session,
            "trigger" => &a.schedule_trigger,
            "run" => &a.running_run,
            _ => &a.provider,
        };
        let refused = seed_agents_store::query!(
            "SELECT CAST(count(*) AS INTEGER) AS \"n!\" FROM audit_events \
             WHERE action = 'access.refused' AND account_id = ?1 AND actor = ?2 AND target = ?3",
            A,
            B,
            format!("{what} {id}")
        )
        .fetch_one(&store.reading().unwrap())
        .unwrap()
        .n;
        assert!(refused > 0, "no refusal recorded for {what} {id}");
    }
}
