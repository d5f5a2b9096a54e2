//! Which writes wait for which on PostgreSQL, on a real server. No write takes a store-wide
//! lock: an append holds its session's row lock, a journal append its run's, a claim skips the
//! runs other claimers hold, a claim with a cap on a kind waits only for capped claims of that
//! kind, and an audited write holds its account's audit chain head. Everything else runs
//! `SERIALIZABLE` and waits for nobody's lock.
//!
//! Another node in the middle of a write is played by a plain client holding the lock such a
//! write holds, by the rule the store documents (`store/postgres/`); a test that waits watches
//! `pg_stat_activity` for the waiter, so nothing here depends on timing.

use seed_agents_store::agents::NewAgent;
use seed_agents_store::lease::Claim;
use seed_agents_store::payload::{
    AgentDefinition, JournalEntryBody, MessageEvent, OpenMap, SessionEventPayload,
    WorkflowJournalEntry,
};
use seed_agents_store::runs::{ClaimLimits, NewRun};
use seed_agents_store::schema::runs::{Kind, Origin};
use seed_agents_store::sessions::NewSession;
use seed_agents_store::Store;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use support::postgres::TempDb;

/// The key of the lock a claim with a cap on workflow runs holds (`store/postgres/claim.rs`).
const WORKFLOW_CAP_LOCK: i64 = (0x6361_7073 << 32) | 2;

fn agent_of(store: &Store, account: &str) -> String {
    store
        .create_agent(
            account,
            &NewAgent {
                definition: AgentDefinition::default(),
                state_dir: format!("/srv/agents/{account}"),
                public_read: false,
                public_chat: false,
            },
        )
        .unwrap()
        .id
}

fn session_of(store: &Store, account: &str, agent: &str) -> String {
    store
        .create_session(
            account,
            &NewSession {
                agent_id: agent.into(),
                ..NewSession::default()
            },
        )
        .unwrap()
        .id
}

/// A workflow run of `account`, claimed: the claim a worker journals under.
fn claimed_run(store: &Store, account: &str) -> Claim {
    let run = store
        .enqueue_run(&NewRun::new(account, Kind::Workflow, Origin::Workflow, "w"))
        .unwrap();
    let row = store.claim_run(account, &run.id, "node").unwrap().unwrap();
    Claim::of(&row).unwrap()
}

fn log_entry() -> WorkflowJournalEntry {
    WorkflowJournalEntry::Log(JournalEntryBody {
        call_seq: 1,
        key: None,
        extra: OpenMap::new(),
    })
}

fn event(text: &str) -> SessionEventPayload {
    MessageEvent::user(text).into()
}

/// Runs `f` on its own thread; its result arrives on the receiver.
fn start<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> mpsc::Receiver<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx
}

/// Waits until `n` sessions of the database wait for a lock (a row's or an advisory one).
fn await_waiters(client: &mut postgres::Client, n: i64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let waiting: i64 = client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity \
                 WHERE wait_event_type = 'Lock' AND datname = current_database()",
                &[],
            )
            .unwrap()
            .get(0);
        if waiting == n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{waiting} sessions wait for a lock, not {n}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What `rx` answers within a minute: a write that should not wait for the held lock.
fn went_through<T>(rx: mpsc::Receiver<T>, what: &str) -> T {
    rx.recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("{what} waited for another node's lock"))
}

#[test]
fn an_append_waits_only_for_appends_to_its_own_session_or_run() {
    let Some(db) = TempDb::new("locks_sessions") else {
        return;
    };
    let store = Store::open(&db.url).unwrap();
    let agent = agent_of(&store, "acct-a");
    let (mine, beside) = (
        session_of(&store, "acct-a", &agent),
        session_of(&store, "acct-a", &agent),
    );
    let theirs = session_of(&store, "acct-b", &agent_of(&store, "acct-b"));
    let (my_run, other_run) = (claimed_run(&store, "acct-a"), claimed_run(&store, "acct-a"));

    // Another node, half way through an append to `mine` and one to `my_run`'s journal.
    let mut node = db.client();
    let mut append = node.transaction().unwrap();
    append
        .execute("SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE", &[&mine])
        .unwrap();
    append
        .execute(
            "SELECT 1 FROM runs WHERE id = $1 FOR UPDATE",
            &[&my_run.run_id],
        )
        .unwrap();

    // Appends to other sessions (of the same account and agent too), other runs' journals and
    // every other write go through.
    for (account, session) in [("acct-a", beside.clone()), ("acct-b", theirs)] {
        let store = store.clone();
        let appended = start(move || store.append_event(account, &session, &event(account)));
        assert_eq!(
            went_through(appended, "an append to another session")
                .unwrap()
                .seq,
            1
        );
    }
    let journaled = {
        let store = store.clone();
        start(move || store.append_journal(&other_run, &log_entry()))
    };
    assert_eq!(
        went_through(journaled, "another run's journal append").unwrap(),
        1
    );
    let touched = {
        let store = store.clone();
        start(move || store.touch_account("acct-a"))
    };
    went_through(touched, "a write of the same account").unwrap();

    // Appends to the held session and journal wait.
    let same = {
        let (store, session) = (store.clone(), mine.clone());
        start(move || store.append_event("acct-a", &session, &event("a")))
    };
    let same_journal = {
        let store = store.clone();
        start(move || store.append_journal(&my_run, &log_entry()))
    };
    let mut watcher = db.client();
    await_waiters(&mut watcher, 2);
    assert!(same.try_recv().is_err() && same_journal.try_recv().is_err());

    append.commit().unwrap();
    assert_eq!(same.recv().unwrap().unwrap().seq, 1);
    assert_eq!(same_journal.recv().unwrap().unwrap(), 1);
}

/// An audited write holds its account's chain head: another account's audited writes go
/// through, the same account's wait, then append after it with the next seq.
#[test]
fn an_audited_write_waits_only_for_its_own_accounts_chain() {
    let Some(db) = TempDb::new("locks_audit") else {
        return;
    };
    let store = Store::open(&db.url).unwrap();
    for account in ["acct-a", "acct-b"] {
        store.set_secret(account, "first", b"v", None).unwrap();
    }

    // Another node, half way through an audited write of acct-a.
    let mut node = db.client();
    let mut audited = node.transaction().unwrap();
    audited
        .execute(
            "SELECT 1 FROM audit_chain WHERE chain = $1 FOR UPDATE",
            &[&"acct-a"],
        )
        .unwrap();

    let other = {
        let store = store.clone();
        start(move || store.set_secret("acct-b", "second", b"v", None))
    };
    went_through(other, "another account's audited write").unwrap();
    let same = {
        let store = store.clone();
        start(move || store.set_secret("acct-a", "second", b"v", None))
    };
    let mut watcher = db.client();
    await_waiters(&mut watcher, 1);
    assert!(same.try_recv().is_err());

    audited.commit().unwrap();
    same.recv().unwrap().unwrap();
    let report = store.verify_audit_log().unwrap();
    assert!(report.is_intact(), "{:?}", report.problems);
    assert_eq!((report.chains, report.rows, report.head_seq), (2, 4, 4));
}

/// A claim takes the next run when another node holds the first, and waits for another node's
/// capped claim only when it has a cap on the same kind.
#[test]
fn claims_pass_over_held_runs_and_only_capped_claims_wait_for_each_other() {
    let Some(db) = TempDb::new("locks_claims") else {
        return;
    };
    let store = Store::open(&db.url).unwrap();
    let mut queued: Vec<_> = (0..3)
        .map(|i| {
            let title = format!("w{i}");
            store
                .enqueue_run(&NewRun::new(
                    "acct-a",
                    Kind::Workflow,
                    Origin::Workflow,
                    &title,
                ))
                .unwrap()
        })
        .collect();
    // In claim order: oldest first, then by id.
    queued.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    let queued: Vec<String> = queued.into_iter().map(|r| r.id).collect();

    // Another node holds the oldest run (half way through its own claim of it) and the
    // workflow cap's lock.
    let mut node = db.client();
    let mut claim = node.transaction().unwrap();
    claim
        .execute("SELECT 1 FROM runs WHERE id = $1 FOR UPDATE", &[&queued[0]])
        .unwrap();
    claim
        .execute("SELECT pg_advisory_xact_lock($1)", &[&WORKFLOW_CAP_LOCK])
        .unwrap();

    let uncapped = {
        let store = store.clone();
        start(move || store.claim_next_run("w1", ClaimLimits::default()))
    };
    let run = went_through(uncapped, "an uncapped claim")
        .unwrap()
        .unwrap();
    assert_eq!(
        run.id, queued[1],
        "the held run is passed over, the next one taken"
    );

    let capped = {
        let store = store.clone();
        let limits = ClaimLimits {
            agent: u32::MAX,
            workflow: 5,
        };
        start(move || store.claim_next_run("w2", limits))
    };
    let mut watcher = db.client();
    await_waiters(&mut watcher, 1);
    assert!(capped.try_recv().is_err());
    claim.commit().unwrap();
    assert_eq!(capped.recv().unwrap().unwrap().unwrap().id, queued[0]);
}

/// Of two claims of one session's runs racing on two nodes, the second meets the unique index
/// `runs_live_agent_by_session`, claims again, and passes that session over: a session never has
/// two live agent runs, though each claim is one statement outside a transaction.
#[test]
fn racing_claims_of_one_sessions_runs_leave_it_one_live_run() {
    let Some(db) = TempDb::new("locks_session_claims") else {
        return;
    };
    let store = Store::open(&db.url).unwrap();
    let agent = agent_of(&store, "acct-a");
    let busy = session_of(&store, "acct-a", &agent);
    let other = session_of(&store, "acct-a", &agent);
    let turn = |session: &str, title: &str| {
        let mut run = NewRun::new("acct-a", Kind::Agent, Origin::User, title);
        run.agent_id = Some(agent.clone());
        run.session_id = Some(session.to_owned());
        store.enqueue_run(&run).unwrap().id
    };
    let (first, second, elsewhere) = (turn(&busy, "1"), turn(&busy, "2"), turn(&other, "3"));

    // Another node has claimed the session's first run and not yet committed: the store's claim
    // does not see that claim, passes the locked run over and takes the session's second run,
    // whose index entry then waits for the other node's.
    let mut node = db.client();
    let mut claim = node.transaction().unwrap();
    let n = claim
        .execute(
            "UPDATE runs SET status = 'claimed', lease_owner = 'node', attempt = attempt + 1 \
             WHERE id = $1",
            &[&first],
        )
        .unwrap();
    assert_eq!(n, 1);
    let racing = {
        let store = store.clone();
        start(move || store.claim_next_run("w1", ClaimLimits::default()))
    };
    let mut watcher = db.client();
    await_waiters(&mut watcher, 1);
    claim.commit().unwrap();
    let claimed = went_through(racing, "the racing claim").unwrap().unwrap();
    assert_eq!(claimed.id, elsewhere, "the busy session is passed over");
    let live: i64 = watcher
        .query_one(
            "SELECT count(*) FROM runs WHERE session_id = $1 AND status IN ('claimed', 'running')",
            &[&busy],
        )
        .unwrap()
        .get(0);
    assert_eq!(live, 1);
    let second = store.run("acct-a", &second).unwrap().unwrap();
    assert_eq!(
        second.status,
        seed_agents_store::schema::runs::Status::Queued
    );
    assert_eq!(second.attempt, 0, "its claim was undone whole");
}

/// The variables a child of [`a_stopped_node_holds_the_others_up_only_within_its_bounds`]
/// reads: the database it stalls on, and the session it stalls appending to.
const STALLING: &str = "SEED_TEST_STALLING_NODE";
const STALLING_SESSION: &str = "SEED_TEST_STALLING_SESSION";

/// The node that stalls: half way through an append (inside an idempotent action's
/// transaction, so that it can wait there) it says so and waits for its standard input to close.
/// The test stops it there (SIGSTOP), as a node paused by its host or cut off mid-write would
/// be; the stop comes from outside so that the node cannot go on before it has taken hold.
fn stall(url: &str, session: &str) {
    use std::io::{Read, Write};
    let store = Store::options()
        .idle_in_transaction_timeout(Duration::from_secs(10))
        .open(url)
        .unwrap();
    let action = seed_agents_store::idempotency::Action::CreateSession;
    let outcome = store.idempotent("acct-stalled", action, Some("stalled-1"), &(), |tx, now| {
        seed_agents_store::events::append_event(tx, now, "acct-stalled", session, &event("s"))?;
        println!("HOLDING");
        std::io::stdout().flush().unwrap();
        let mut rest = Vec::new();
        std::io::stdin().read_to_end(&mut rest).unwrap();
        Ok(())
    });
    println!("RESUMED {}", outcome.is_ok());
}

/// Kills the child when the test ends, however it ends.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A node stopped (SIGSTOP) half way through an append stalls only what waits for the same
/// session, and that only within the store's bounds: the other node's writes elsewhere go on at
/// once; an append to the stalled session waits at most its lock timeout (`busy_timeout`) and
/// fails `Busy`, never hanging; once the stopped node's session has sat idle in its transaction
/// for its `idle_in_transaction_timeout`, the server ends it, its write is rolled back, its
/// locks go, and the append goes through.
#[test]
fn a_stopped_node_holds_the_others_up_only_within_its_bounds() {
    use std::io::BufRead;
    if let Ok(url) = std::env::var(STALLING) {
        return stall(&url, &std::env::var(STALLING_SESSION).unwrap());
    }
    let Some(db) = TempDb::new("stopped_node") else {
        return;
    };
    // The other node opens first, so that nothing but its write runs while the first is stopped.
    let other = Store::options()
        .busy_timeout(Duration::from_millis(300))
        .open(&db.url)
        .unwrap();
    let stalled = session_of(&other, "acct-stalled", &agent_of(&other, "acct-stalled"));
    let elsewhere = session_of(&other, "acct-other", &agent_of(&other, "acct-other"));
    let mut child = Child(
        support::rerun(&support::child_test!(
            "a_stopped_node_holds_the_others_up_only_within_its_bounds"
        ))
        .env(STALLING, &db.url)
        .env(STALLING_SESSION, &stalled)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap(),
    );
    let mut lines = std::io::BufReader::new(child.0.stdout.take().unwrap()).lines();
    assert!(
        // libtest may print the test's name on the same line first.
        lines
            .by_ref()
            .map_while(Result::ok)
            .any(|l| l.ends_with("HOLDING")),
        "the stalling node never held the lock"
    );
    let pid = child.0.id().to_string();
    let signal = |name: &str| {
        let sent = std::process::Command::new("kill")
            .args([name, &pid])
            .status()
            .unwrap();
        assert!(sent.success(), "kill {name} {pid}");
    };
    signal("-STOP");
    let stopped = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('T'))
        })
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !stopped() {
        assert!(Instant::now() < deadline, "the node did not stop");
        std::thread::sleep(Duration::from_millis(10));
    }

    // Everything else goes on while the node is stopped.
    other.touch_account("acct-stalled").unwrap();
    assert_eq!(
        other
            .append_event("acct-other", &elsewhere, &event("o"))
            .unwrap()
            .seq,
        1
    );
    let queued = other
        .enqueue_run(&NewRun::new(
            "acct-other",
            Kind::Workflow,
            Origin::Workflow,
            "w",
        ))
        .unwrap();
    let claimed = other
        .claim_next_run("w", ClaimLimits::default())
        .unwrap()
        .unwrap();
    assert_eq!(claimed.id, queued.id);
    // An append to the stalled session waits at most its bound.
    let e = other
        .append_event("acct-stalled", &stalled, &event("x"))
        .unwrap_err();
    assert_eq!(e.kind(), seed_agents_store::ErrorKind::Busy, "{e}");
    // Bounded by the test, not timed: the append goes through once the server has ended the
    // stopped session (after its 10 s idle timeout), while the node is still stopped.
    let deadline = Instant::now() + Duration::from_secs(60);
    let appended = loop {
        match other.append_event("acct-stalled", &stalled, &event("x")) {
            Ok(appended) => break appended,
            Err(e) if e.kind() == seed_agents_store::ErrorKind::Busy => {
                assert!(Instant::now() < deadline, "still waiting: {e}");
            }
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(appended.seq, 1, "the stalled append was rolled back");
    assert!(
        stopped(),
        "the node was still stopped when the others went on"
    );
    signal("-CONT");
    drop(child.0.stdin.take()); // lets the node go on to its commit
                                // Read to the end, so the child's last lines find a reader.
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let resumed = rest.iter().find(|l| l.contains("RESUMED"));
    assert!(
        resumed.is_some_and(|l| l.ends_with("RESUMED false")),
        "the stopped node's write was rolled back: {resumed:?}"
    );
    let accounts: i64 = db
        .client()
        .query_one(
            "SELECT count(*) FROM action_idempotency WHERE account_id = 'acct-stalled'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(accounts, 0);
}
