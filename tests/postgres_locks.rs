//! Which writes wait for which on PostgreSQL, on a real server: an append to the Log or to a
//! run's journal holds its account's lock and the store's write lock shared, so another node's
//! append for another account goes through while one for the same account, and every
//! store-wide write, waits.
//!
//! Another node in the middle of an append is played by a plain client holding the locks such an
//! append holds, by the rule the store documents (`store/postgres/session.rs`); a test that waits
//! watches `pg_locks` for the waiter, so nothing here depends on timing.

mod backend;
mod postgres_common;

use postgres_common::TempDb;
use seed_agents_store::agents::NewAgent;
use seed_agents_store::lease::Claim;
use seed_agents_store::payload::{
    AgentDefinition, JournalEntryBody, MessageEvent, OpenMap, SessionEventPayload,
    WorkflowJournalEntry,
};
use seed_agents_store::runs::NewRun;
use seed_agents_store::schema::runs::{Kind, Origin};
use seed_agents_store::sessions::NewSession;
use seed_agents_store::Store;
use sha2::Digest;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The store's write lock (one key).
const WRITE_LOCK: i64 = 0x7365_6564_5f77_7269;
/// The class of the accounts' locks (the first of two keys).
const ACCOUNT_LOCK_CLASS: i32 = 0x7365_6564;

/// The second key of `account`'s lock: the first four bytes of its SHA-256.
fn account_key(account: &str) -> i32 {
    let digest = sha2::Sha256::digest(account.as_bytes());
    i32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]])
}

fn session_of(store: &Store, account: &str) -> String {
    let agent = store
        .create_agent(
            account,
            &NewAgent {
                definition: AgentDefinition::default(),
                state_dir: format!("/srv/agents/{account}"),
                public_read: false,
                public_chat: false,
            },
        )
        .unwrap();
    store
        .create_session(
            account,
            &NewSession {
                agent_id: agent.id,
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

/// Waits until `n` connections to the database wait for an advisory lock.
fn await_waiters(client: &mut postgres::Client, n: i64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let waiting: i64 = client
            .query_one(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted \
                 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                &[],
            )
            .unwrap()
            .get(0);
        if waiting == n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{waiting} connections wait for a lock, not {n}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_append_waits_only_for_its_own_account_and_for_store_wide_writes() {
    let Some(db) = TempDb::new("locks_accounts") else {
        return;
    };
    let store = Store::open(&db.url).unwrap();
    let mine = session_of(&store, "acct-a");
    let theirs = session_of(&store, "acct-b");
    let my_run = claimed_run(&store, "acct-a");
    let their_run = claimed_run(&store, "acct-b");

    // Another node, half way through an append for acct-a.
    let mut node = db.client();
    let mut append = node.transaction().unwrap();
    append
        .execute(
            "SELECT pg_advisory_xact_lock_shared($1), pg_advisory_xact_lock($2, $3)",
            &[&WRITE_LOCK, &ACCOUNT_LOCK_CLASS, &account_key("acct-a")],
        )
        .unwrap();

    // acct-b's append does not wait for it.
    let other = {
        let (store, session) = (store.clone(), theirs.clone());
        start(move || store.append_event("acct-b", &session, &event("b")))
    };
    let appended = other
        .recv_timeout(Duration::from_secs(60))
        .expect("an append for another account waited for acct-a's")
        .unwrap();
    assert_eq!(appended.seq, 1);
    let journaled = {
        let store = store.clone();
        start(move || store.append_journal(&their_run, &log_entry()))
    };
    let seq = journaled
        .recv_timeout(Duration::from_secs(60))
        .expect("a journal append for another account waited for acct-a's")
        .unwrap();
    assert_eq!(seq, 1);

    // acct-a's own appends and a store-wide write do.
    let same = {
        let (store, session) = (store.clone(), mine.clone());
        start(move || store.append_event("acct-a", &session, &event("a")))
    };
    let wide = {
        let store = store.clone();
        start(move || store.touch_account("acct-c"))
    };
    let same_journal = {
        let store = store.clone();
        start(move || store.append_journal(&my_run, &log_entry()))
    };
    let mut watcher = db.client();
    await_waiters(&mut watcher, 3);
    assert!(same.try_recv().is_err() && wide.try_recv().is_err());
    assert!(same_journal.try_recv().is_err());

    append.commit().unwrap();
    assert_eq!(same.recv().unwrap().unwrap().seq, 1);
    assert_eq!(same_journal.recv().unwrap().unwrap(), 1);
    wide.recv().unwrap().unwrap();
}

/// A store-wide write in progress holds every append back, of every account.
#[test]
fn a_store_wide_write_holds_every_append_back() {
    let Some(db) = TempDb::new("locks_store_wide") else {
        return;
    };
    let store = Store::open(&db.url).unwrap();
    let sessions = [session_of(&store, "acct-a"), session_of(&store, "acct-b")];

    let mut node = db.client();
    let mut write = node.transaction().unwrap();
    write
        .execute("SELECT pg_advisory_xact_lock($1)", &[&WRITE_LOCK])
        .unwrap();
    let appends: Vec<_> = ["acct-a", "acct-b"]
        .into_iter()
        .zip(sessions)
        .map(|(account, session)| {
            let store = store.clone();
            start(move || store.append_event(account, &session, &event(account)))
        })
        .collect();
    let mut watcher = db.client();
    await_waiters(&mut watcher, 2);
    assert!(appends.iter().all(|a| a.try_recv().is_err()));

    write.commit().unwrap();
    for append in appends {
        assert_eq!(append.recv().unwrap().unwrap().seq, 1);
    }
}

/// The variable a child of [`a_stopped_node_holds_the_others_up_only_within_its_bounds`] reads:
/// the database it stalls on.
const STALLING: &str = "SEED_TEST_STALLING_NODE";

/// The node that stalls: inside a store-wide write (an idempotent action's transaction) it says
/// so and waits for its standard input to close. The test stops it there (SIGSTOP), as a node
/// paused by its host or cut off mid-write would be; the stop comes from outside so that the
/// node cannot go on before it has taken hold.
fn stall(url: &str) {
    use std::io::{Read, Write};
    let store = Store::options()
        .idle_in_transaction_timeout(Duration::from_secs(10))
        .open(url)
        .unwrap();
    let action = seed_agents_store::idempotency::Action::CreateSession;
    let outcome = store.idempotent("acct-stalled", action, Some("stalled-1"), &(), |_, _| {
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

/// A node stopped (SIGSTOP) while it holds the store's write lock holds the others up only
/// within the store's bounds: another node's write waits at most its lock timeout
/// (`busy_timeout`) and fails `Busy`, never hanging; once the stopped node's session has sat
/// idle in its transaction for its `idle_in_transaction_timeout`, the server ends it, its write
/// is rolled back, its locks go, and the others write again. Without the bounds the others
/// waited for as long as the node stayed stopped.
#[test]
fn a_stopped_node_holds_the_others_up_only_within_its_bounds() {
    use std::io::BufRead;
    if let Ok(url) = std::env::var(STALLING) {
        return stall(&url);
    }
    let Some(db) = TempDb::new("stopped_node") else {
        return;
    };
    // The other node opens first, so that nothing but its write runs while the first is stopped.
    let other = Store::options()
        .busy_timeout(Duration::from_millis(300))
        .open(&db.url)
        .unwrap();
    let mut child = Child(
        std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "a_stopped_node_holds_the_others_up_only_within_its_bounds",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env(STALLING, &db.url)
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

    let e = other.touch_account("acct-other").unwrap_err();
    assert_eq!(e.kind(), seed_agents_store::ErrorKind::Busy, "{e}");
    // Bounded by the test, not timed: the write goes through once the server has ended the
    // stopped session (after its 10 s idle timeout), while the node is still stopped.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match other.touch_account("acct-other") {
            Ok(()) => break,
            Err(e) if e.kind() == seed_agents_store::ErrorKind::Busy => {
                assert!(Instant::now() < deadline, "still waiting: {e}");
            }
            Err(e) => panic!("{e}"),
        }
    }
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
