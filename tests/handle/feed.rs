//! The change feed: a session's events and a run tree's journals replayed then live, with no
//! gap and no duplicate at the switch, woken from this process, from other processes on the
//! same file and from other nodes; the end of a followed session; the run waiter.
//!
//! Both backends (see `support::backend`): on PostgreSQL each child process is another node.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use rand::Rng;
use seed_agents_store::agents::NewAgent;
use seed_agents_store::lease::Claim;
use seed_agents_store::payload::{AgentDefinition, Ipld, SessionEventPayload, ToolCallEvent};
use seed_agents_store::payload::{JournalEntryBody, OpenMap, RunErrorInfo, WorkflowJournalEntry};
use seed_agents_store::runs::{ClaimLimits, NewRun, RunOutcome};
use seed_agents_store::schema::runs::{Kind, Origin};
use seed_agents_store::sessions::NewSession;
use seed_agents_store::{Error, Store};

const A: &str = "acct-a";
/// How long any one wait may take before the test calls it a hang.
const PATIENCE: Duration = Duration::from_secs(20);

const ROLE: &str = "FEED_CHILD_ROLE";
const DB: &str = "FEED_CHILD_DB";

fn event(n: usize) -> SessionEventPayload {
    ToolCallEvent::new(format!("call-{n}"), "read", Ipld::String("notes.md".into())).into()
}

fn open(path: &Path) -> Store {
    Store::open(path).unwrap()
}

/// A store with one agent and `sessions` sessions of account A.
fn fixture(dir: &Path, sessions: usize) -> (PathBuf, Store, String, Vec<String>) {
    let path = support::backend::location(dir, "feed.sqlite");
    let store = open(&path);
    let agent = store
        .create_agent(
            A,
            &NewAgent {
                definition: AgentDefinition::default(),
                state_dir: dir.join("agent").display().to_string(),
                public_read: false,
                public_chat: false,
            },
        )
        .unwrap();
    let ids = (0..sessions)
        .map(|_| {
            store
                .create_session(
                    A,
                    &NewSession {
                        agent_id: agent.id.clone(),
                        ..NewSession::default()
                    },
                )
                .unwrap()
                .id
        })
        .collect();
    (path, store, agent.id, ids)
}

/// Runs this binary's `child` test as another process with `role`.
fn spawn(path: &Path, role: &str) -> Child {
    support::rerun(&support::child_test!("child"))
        .env(ROLE, role)
        .env(DB, path)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// The other processes' part: `append <session> <count>` appends that many events;
/// `forever <session>` appends one every few milliseconds until it is killed.
#[test]
fn child() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let store = open(Path::new(&std::env::var(DB).unwrap()));
    let words: Vec<&str> = role.split(' ').collect();
    match words.as_slice() {
        ["append", session, count] => {
            for n in 0..count.parse().unwrap() {
                store.append_event(A, session, &event(n)).unwrap();
            }
        }
        ["forever", session] => {
            for n in 0.. {
                store.append_event(A, session, &event(n)).unwrap();
                std::thread::sleep(Duration::from_millis(3));
            }
        }
        ["enqueue"] => {
            store
                .enqueue_run(&NewRun::new(A, Kind::Workflow, Origin::User, "from afar"))
                .unwrap();
        }
        _ => panic!("unknown role {role}"),
    }
}

/// Reads `feed` until it has yielded the event with seq `last`, checking that the seqs run
/// from `after + 1` without a gap or a repeat.
fn collect_until(feed: &mut seed_agents_store::feed::EventFeed, after: i64, last: i64) -> Vec<i64> {
    let mut seqs = Vec::new();
    let mut expected = after + 1;
    while expected <= last {
        let row = feed
            .next_within(PATIENCE)
            .unwrap()
            .unwrap_or_else(|| panic!("no event {expected} within {PATIENCE:?} (after {after})"));
        assert_eq!(row.seq, expected, "after {after}: a gap or a repeat");
        seqs.push(row.seq);
        expected += 1;
    }
    seqs
}

#[test]
fn subscribers_joining_at_random_moments_get_every_event_once_in_order() {
    const THREADS: usize = 4;
    const PER_WRITER: usize = 60;
    const SUBSCRIBERS: usize = 50;
    let dir = tempfile::tempdir().unwrap();
    let (path, store, _, sessions) = fixture(dir.path(), 2);
    // 4 threads and 2 processes, each appending to both sessions.
    let total = ((THREADS + 2) * PER_WRITER) as i64;
    let children: Vec<_> = sessions
        .iter()
        .flat_map(|s| [0, 1].map(|_| spawn(&path, &format!("append {s} {}", PER_WRITER / 2))))
        .collect();
    let writers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (store, sessions) = (store.clone(), sessions.clone());
            std::thread::spawn(move || {
                for n in 0..PER_WRITER {
                    let session = &sessions[(n + t) % 2];
                    store.append_event(A, session, &event(n)).unwrap();
                }
            })
        })
        .collect();
    let subscribers: Vec<_> = (0..SUBSCRIBERS)
        .map(|i| {
            let (store, sessions) = (store.clone(), sessions.clone());
            std::thread::spawn(move || {
                let mut rng = rand::thread_rng();
                std::thread::sleep(Duration::from_millis(rng.gen_range(0..400)));
                let session = &sessions[i % 2];
                // Joins somewhere in what is there already (or at 0).
                let head = store
                    .events_after(A, session, 0, None)
                    .unwrap()
                    .last()
                    .map_or(0, |e| e.seq);
                let after = rng.gen_range(0..=head);
                let mut feed = store.follow_events(A, session, after).unwrap();
                let got = collect_until(&mut feed, after, total / 2);
                assert_eq!(got.len() as i64, total / 2 - after);
                // Nothing after the last: no duplicate arrives late.
                assert!(feed
                    .next_within(Duration::from_millis(50))
                    .unwrap()
                    .is_none());
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    for s in subscribers {
        s.join().unwrap();
    }
}

#[test]
fn an_event_from_another_process_wakes_a_waiting_follower() {
    let dir = tempfile::tempdir().unwrap();
    let (path, store, _, sessions) = fixture(dir.path(), 1);
    let mut feed = store.follow_events(A, &sessions[0], 0).unwrap();
    assert!(feed
        .next_within(Duration::from_millis(20))
        .unwrap()
        .is_none());
    let mut other = spawn(&path, &format!("append {} 3", sessions[0]));
    assert_eq!(collect_until(&mut feed, 0, 3), vec![1, 2, 3]);
    assert!(other.wait().unwrap().success());
}

#[test]
fn a_killed_writer_then_a_new_one_leave_followers_receiving() {
    let dir = tempfile::tempdir().unwrap();
    let (path, store, _, sessions) = fixture(dir.path(), 1);
    let session = &sessions[0];
    let mut feed = store.follow_events(A, session, 0).unwrap();
    let mut first = spawn(&path, &format!("forever {session}"));
    let mut seen = collect_until(&mut feed, 0, 5);
    first.kill().unwrap();
    first.wait().unwrap();
    // Whatever the killed writer committed, in order, then nothing more from it.
    while let Some(row) = feed.next_within(Duration::from_millis(300)).unwrap() {
        assert_eq!(row.seq, *seen.last().unwrap() + 1);
        seen.push(row.seq);
    }
    let head = *seen.last().unwrap();
    let mut second = spawn(&path, &format!("append {session} 4"));
    assert_eq!(collect_until(&mut feed, head, head + 4).len(), 4);
    assert!(second.wait().unwrap().success());
}

#[test]
fn a_deleted_session_ends_its_followers_instead_of_leaving_them_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let (_, store, agent, sessions) = fixture(dir.path(), 3);
    store.append_event(A, &sessions[0], &event(0)).unwrap();
    let follow = |session: &str| {
        let mut feed = store.follow_events(A, session, 0).unwrap();
        std::thread::spawn(move || loop {
            match feed.next_within(PATIENCE) {
                Ok(Some(_)) => continue,
                Ok(None) => panic!("still waiting after {PATIENCE:?}"),
                Err(e) => return e,
            }
        })
    };
    let one = follow(&sessions[0]);
    let by_agent = [follow(&sessions[1]), follow(&sessions[2])];
    std::thread::sleep(Duration::from_millis(50));
    store.delete_session(A, &sessions[0]).unwrap();
    let end = one.join().unwrap();
    assert!(
        matches!(&end, Error::NotFound { what: "session", id } if *id == sessions[0]),
        "{end:?}"
    );
    // Deleting the agent deletes its sessions: their followers end too.
    store.delete_agent(A, &agent).unwrap();
    for feed in by_agent {
        assert!(matches!(feed.join().unwrap(), Error::NotFound { .. }));
    }
}

#[test]
fn an_iterator_yields_the_end_once_then_stops() {
    let dir = tempfile::tempdir().unwrap();
    let (_, store, _, sessions) = fixture(dir.path(), 1);
    store.append_event(A, &sessions[0], &event(0)).unwrap();
    let mut feed = store
        .follow_events(A, &sessions[0], 0)
        .unwrap()
        .timeout(Duration::from_millis(10));
    assert_eq!(feed.next().unwrap().unwrap().seq, 1);
    assert!(feed.next().is_none(), "nothing new within the timeout");
    assert_eq!(feed.position(), 1);
    store.delete_session(A, &sessions[0]).unwrap();
    assert!(matches!(feed.next(), Some(Err(Error::NotFound { .. }))));
    assert!(feed.next().is_none());
}

#[test]
fn another_accounts_session_cannot_be_followed() {
    let dir = tempfile::tempdir().unwrap();
    let (_, store, _, sessions) = fixture(dir.path(), 1);
    let refused = store.follow_events("acct-b", &sessions[0], 0).unwrap_err();
    assert!(
        matches!(
            refused,
            Error::NotFound {
                what: "session",
                ..
            }
        ),
        "{refused:?}"
    );
    let unknown = store.follow_events(A, "no-such-session", 0).unwrap_err();
    assert!(matches!(
        unknown,
        Error::NotFound {
            what: "session",
            ..
        }
    ));
    assert!(matches!(
        store.follow_events(A, &sessions[0], -1),
        Err(Error::Invalid { .. })
    ));
}

#[test]
fn a_far_behind_follower_reads_its_backlog_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let (_, store, _, sessions) = fixture(dir.path(), 1);
    let events: Vec<_> = (0..700).map(event).collect();
    store.append_events(A, &sessions[0], &events).unwrap();
    let mut feed = store.follow_events(A, &sessions[0], 0).unwrap();
    // More than a page behind: read a page at a time, none lost between pages.
    assert_eq!(collect_until(&mut feed, 0, 700).len(), 700);
}

/// A run claimed by `owner`, with its claim.
fn claimed(store: &Store, owner: &str) -> Claim {
    let run = store
        .claim_next_run(owner, ClaimLimits::default())
        .unwrap()
        .expect("a queued run");
    Claim::of(&run).unwrap()
}

fn log_entry(call_seq: u64) -> WorkflowJournalEntry {
    WorkflowJournalEntry::Log(JournalEntryBody {
        call_seq,
        key: None,
        extra: OpenMap::new(),
    })
}

#[test]
fn a_run_trees_journals_replay_then_follow_its_new_children() {
    let dir = tempfile::tempdir().unwrap();
    let path = support::backend::location(dir.path(), "feed.sqlite");
    let store = open(&path);
    let root = store
        .enqueue_run(&NewRun::new(A, Kind::Workflow, Origin::User, "root"))
        .unwrap();
    let claim = claimed(&store, "w");
    for n in 0..3 {
        store.append_journal(&claim, &log_entry(n)).unwrap();
    }
    let mut feed = store.follow_journal(A, &root.id).unwrap();
    let replay: Vec<_> = (0..3)
        .map(|_| feed.next_within(PATIENCE).unwrap().unwrap())
        .collect();
    assert!(replay.iter().all(|e| e.run_id == root.id));
    assert_eq!(
        replay.iter().map(|e| e.record.seq).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    // A child joins the tree and writes; the root writes again.
    let mut child_run = NewRun::new(A, Kind::Workflow, Origin::User, "child");
    child_run.parent_run_id = Some(root.id.clone());
    let child = store.enqueue_run(&child_run).unwrap();
    let child_claim = claimed(&store, "w2");
    assert_eq!(child_claim.run_id, child.id);
    let writer = store.clone();
    let (c1, c2) = (claim.clone(), child_claim.clone());
    let thread = std::thread::spawn(move || {
        writer.append_journal(&c2, &log_entry(10)).unwrap();
        writer.append_journal(&c1, &log_entry(4)).unwrap();
    });
    let mut live: Vec<_> = (0..2)
        .map(|_| {
            let e = feed.next_within(PATIENCE).unwrap().expect("a live entry");
            (e.run_id, e.record.seq)
        })
        .collect();
    thread.join().unwrap();
    live.sort();
    let mut expected = vec![(root.id.clone(), 4), (child.id.clone(), 1)];
    expected.sort();
    assert_eq!(live, expected);
    assert!(feed
        .next_within(Duration::from_millis(30))
        .unwrap()
        .is_none());
    // Only a root can be followed, and only by its account.
    assert!(matches!(
        store.follow_journal(A, &child.id),
        Err(Error::Invalid { .. })
    ));
    assert!(matches!(
        store.follow_journal("acct-b", &root.id),
        Err(Error::NotFound { what: "run", .. })
    ));
}

#[test]
fn an_idle_worker_wakes_for_an_enqueue_here_or_elsewhere_and_for_a_freed_cap() {
    let dir = tempfile::tempdir().unwrap();
    let path = support::backend::location(dir.path(), "feed.sqlite");
    let store = open(&path);
    let mut waiter = store.run_waiter().unwrap();
    assert!(
        !waiter.wait(Duration::from_millis(30)).unwrap(),
        "nothing queued"
    );
    // An enqueue on another thread.
    let producer = store.clone();
    let started = Instant::now();
    let thread = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        producer
            .enqueue_run(&NewRun::new(A, Kind::Workflow, Origin::User, "one"))
            .unwrap();
    });
    assert!(waiter.wait(PATIENCE).unwrap());
    assert!(started.elapsed() < PATIENCE);
    thread.join().unwrap();
    // Capped at one workflow run: the second enqueued waits for the first to end.
    let caps = ClaimLimits {
        agent: 1,
        workflow: 1,
    };
    let first = Claim::of(&store.claim_next_run("w", caps).unwrap().unwrap()).unwrap();
    store
        .enqueue_run(&NewRun::new(A, Kind::Workflow, Origin::User, "two"))
        .unwrap();
    let mut waiter = store.run_waiter().unwrap();
    assert!(store.claim_next_run("w", caps).unwrap().is_none(), "capped");
    let finisher = store.clone();
    let thread = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        finisher
            .finalize_run(&first, RunOutcome::Succeeded(Default::default()))
            .unwrap();
    });
    assert!(waiter.wait(PATIENCE).unwrap(), "the cap freed");
    thread.join().unwrap();
    assert!(store.claim_next_run("w", caps).unwrap().is_some());
    // An enqueue by another process (on PostgreSQL, another node).
    let mut waiter = store.run_waiter().unwrap();
    let mut other = spawn(&path, "enqueue");
    assert!(waiter.wait(PATIENCE).unwrap());
    assert!(other.wait().unwrap().success());
}

#[test]
fn a_retried_run_wakes_its_worker_when_its_backoff_ends() {
    let dir = tempfile::tempdir().unwrap();
    let path = support::backend::location(dir.path(), "feed.sqlite");
    let store = open(&path);
    let mut new = NewRun::new(A, Kind::Workflow, Origin::User, "flaky");
    new.max_attempts = 2;
    store.enqueue_run(&new).unwrap();
    let claim = claimed(&store, "w");
    let mut error = RunErrorInfo::new("flaky", "try again");
    error.retryable = Some(true);
    store
        .finalize_run(&claim, RunOutcome::Failed(error))
        .unwrap();
    let mut waiter = store.run_waiter().unwrap();
    assert!(store
        .claim_next_run("w", ClaimLimits::default())
        .unwrap()
        .is_none());
    // No write wakes it: the backoff's end does.
    assert!(waiter.wait(PATIENCE).unwrap());
    let again = store.claim_next_run("w", ClaimLimits::default()).unwrap();
    assert_eq!(again.map(|r| r.attempt), Some(2));
}

#[test]
fn an_idle_worker_wakes_when_a_lease_expires() {
    use seed_agents_store::clock::ManualClock;
    let dir = tempfile::tempdir().unwrap();
    let path = support::backend::location(dir.path(), "feed.sqlite");
    let t = 1_764_000_000_000;
    let clock = ManualClock::new(t);
    let store = Store::open_with_clock(&path, std::sync::Arc::new(clock.clone())).unwrap();
    store
        .enqueue_run(&NewRun::new(A, Kind::Workflow, Origin::User, "held"))
        .unwrap();
    let run = store
        .claim_next_run("w", ClaimLimits::default())
        .unwrap()
        .unwrap();
    let expiry = run.lease_expires_at.unwrap();
    // 80 ms before the lease runs out, and nothing else will change.
    clock.set(expiry - 80);
    let mut waiter = store.run_waiter().unwrap();
    let started = Instant::now();
    assert!(waiter.wait(PATIENCE).unwrap(), "woken by the expiry");
    assert!(started.elapsed() >= Duration::from_millis(70));
    assert!(started.elapsed() < PATIENCE);
    // A waiter whose horizon holds nothing due sleeps out its timeout.
    clock.set(expiry + 1);
    let started = Instant::now();
    assert!(!waiter.wait(Duration::from_millis(60)).unwrap());
    assert!(started.elapsed() >= Duration::from_millis(50));
}

#[cfg(feature = "tokio")]
mod streams {
    use super::*;
    use futures_util::StreamExt;
    use seed_agents_store::AsyncStore;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stream_replays_then_goes_live_and_dropping_it_unsubscribes() {
        let dir = tempfile::tempdir().unwrap();
        let (_, store, _, sessions) = tokio::task::block_in_place(|| fixture(dir.path(), 1));
        let session = sessions[0].clone();
        let store = AsyncStore::new(store);
        store.append_event(A, &session, &event(0)).await.unwrap();
        let mut stream = store.follow_events(A, &session, 0).await.unwrap();
        let first = stream.next().await.unwrap().unwrap();
        assert_eq!(first.seq, 1);
        let writer = store.clone();
        let s = session.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            writer.append_event(A, &s, &event(1)).await.unwrap();
        });
        let second = tokio::time::timeout(PATIENCE, stream.next())
            .await
            .expect("live within the patience")
            .unwrap()
            .unwrap();
        assert_eq!(second.seq, 2);
        // Waiting holds no thread: a timed-out wait leaves the stream usable.
        assert!(
            tokio::time::timeout(Duration::from_millis(20), stream.next())
                .await
                .is_err()
        );
        drop(stream);
        // The session's deletion ends a stream that follows it.
        let mut stream = store.follow_events(A, &session, 2).await.unwrap();
        store.delete_session(A, &session).await.unwrap();
        let end = tokio::time::timeout(PATIENCE, stream.next()).await.unwrap();
        assert!(matches!(end, Some(Err(Error::NotFound { .. }))), "{end:?}");
        assert!(stream.next().await.is_none());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_async_waiter_wakes_for_an_enqueue() {
        let dir = tempfile::tempdir().unwrap();
        let path =
            tokio::task::block_in_place(|| support::backend::location(dir.path(), "feed.sqlite"));
        let store = AsyncStore::open(&path).await.unwrap();
        let mut waiter = store.run_waiter().await.unwrap();
        assert!(!waiter.wait(Duration::from_millis(20)).await.unwrap());
        let producer = store.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            producer
                .enqueue_run(&NewRun::new(A, Kind::Workflow, Origin::User, "one"))
                .await
                .unwrap();
        });
        assert!(waiter.wait(PATIENCE).await.unwrap());
    }
}
