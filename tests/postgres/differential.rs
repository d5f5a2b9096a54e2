//! One meaning on both backends, by property: the same random sequence of store operations runs
//! against a SQLite store and a PostgreSQL store, and every answer, then the final contents of
//! the runs and the Logs, must be the same.
//!
//! Normalised only where the backends may differ: ids the store makes up (agents, sessions,
//! events) are compared by the order they were made in, an error by its kind (its message
//! names the database), and a retried run's `not_before` by being set (its jitter is random on
//! both). Everything else (seqs, statuses, attempts, leases, timestamps from the shared manual
//! clock, payload bytes, the order of listings, which run a claim takes) must be equal.
//!
//! Cases: `DIFFERENTIAL_CASES` (default 1,000, the number CI runs).

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use sea_query::{Expr, ExprTrait, Order, Query};
use seed_agents_store::agents::NewAgent;
use seed_agents_store::clock::ManualClock;
use seed_agents_store::lease::Claim;
use seed_agents_store::payload::{AgentDefinition, MessageEvent, RunErrorInfo, RunOutput};
use seed_agents_store::runs::{ClaimLimits, Finalized, NewRun, RunOutcome};
use seed_agents_store::schema::runs::{self, Kind, Origin, Queue};
use seed_agents_store::sessions::NewSession;
use seed_agents_store::{schema, Store};
use std::collections::HashMap;
use std::sync::Arc;
use support::postgres::TempDb;

const T0: i64 = 1_764_000_000_000;
const ACCOUNTS: [&str; 2] = ["acct-a", "acct-b"];
const TEXTS: [&str; 4] = ["hello", "Hello world", "NIGHTLY report", "été"];
const PATTERNS: [&str; 4] = ["%", "night%", "%WORLD", "_llo%"];

#[derive(Debug, Clone)]
enum Op {
    Agent {
        acct: usize,
    },
    Session {
        acct: usize,
        agent: usize,
    },
    Append {
        acct: usize,
        session: usize,
        text: usize,
    },
    Replay {
        acct: usize,
        session: usize,
        after: i64,
    },
    Enqueue {
        acct: usize,
        agent_run: Option<usize>,
        interactive: bool,
        delay: Option<i64>,
        text: usize,
    },
    Claim {
        cap: Option<u32>,
    },
    Start {
        claim: usize,
    },
    Finalize {
        claim: usize,
        outcome: u8,
    },
    Cancel {
        acct: usize,
        run: usize,
    },
    Listing {
        acct: usize,
        desc: bool,
        pattern: usize,
    },
    Advance {
        ms: i64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..2usize).prop_map(|acct| Op::Agent { acct }),
        (0..2usize, 0..4usize).prop_map(|(acct, agent)| Op::Session { acct, agent }),
        (0..2usize, 0..6usize, 0..4usize).prop_map(|(acct, session, text)| Op::Append {
            acct,
            session,
            text
        }),
        (0..2usize, 0..6usize, 0..4i64).prop_map(|(acct, session, after)| Op::Replay {
            acct,
            session,
            after
        }),
        (
            0..2usize,
            proptest::option::of(0..6usize),
            any::<bool>(),
            proptest::option::of(0..3_000i64),
            0..4usize
        )
            .prop_map(|(acct, agent_run, interactive, delay, text)| Op::Enqueue {
                acct,
                agent_run,
                interactive,
                delay,
                text
            }),
        proptest::option::of(1..3u32).prop_map(|cap| Op::Claim { cap }),
        (0..6usize).prop_map(|claim| Op::Start { claim }),
        (0..6usize, 0..4u8).prop_map(|(claim, outcome)| Op::Finalize { claim, outcome }),
        (0..2usize, 0..8usize).prop_map(|(acct, run)| Op::Cancel { acct, run }),
        (0..2usize, any::<bool>(), 0..4usize).prop_map(|(acct, desc, pattern)| Op::Listing {
            acct,
            desc,
            pattern
        }),
        (1..2_000i64).prop_map(|ms| Op::Advance { ms }),
    ]
}

/// One backend's store and what it made: ids in the order made, named by that order.
struct Side {
    store: Store,
    clock: ManualClock,
    agents: Vec<String>,
    sessions: Vec<(usize, String)>,
    runs: Vec<String>,
    claims: Vec<Claim>,
    names: HashMap<String, String>,
}

impl Side {
    fn new(store: Store, clock: ManualClock) -> Side {
        Side {
            store,
            clock,
            agents: Vec::new(),
            sessions: Vec::new(),
            runs: Vec::new(),
            claims: Vec::new(),
            names: HashMap::new(),
        }
    }

    fn name(&mut self, id: &str, kind: &str) {
        let n = self.names.len();
        self.names.insert(id.to_owned(), format!("<{kind}{n}>"));
    }

    /// `text` with every id this side made replaced by its name.
    fn normal(&self, text: String) -> String {
        let mut text = text;
        for (id, name) in &self.names {
            text = text.replace(id.as_str(), name);
        }
        text
    }

    fn pick<T: Clone>(list: &[T], i: usize) -> Option<T> {
        (!list.is_empty()).then(|| list[i % list.len()].clone())
    }

    /// Runs `op`; its answer, normalised.
    fn run(&mut self, op: &Op) -> String {
        let answer = match op {
            Op::Agent { acct } => {
                let made = self.store.create_agent(
                    ACCOUNTS[*acct],
                    &NewAgent {
                        definition: AgentDefinition::default(),
                        state_dir: "/srv/agents/d".into(),
                        public_read: false,
                        public_chat: false,
                    },
                );
                match made {
                    Ok(agent) => {
                        self.name(&agent.id, "agent");
                        self.agents.push(agent.id.clone());
                        format!("{agent:?}")
                    }
                    Err(e) => format!("Err({:?})", e.kind()),
                }
            }
            Op::Session { acct, agent } => {
                let Some(agent) = Self::pick(&self.agents, *agent) else {
                    return "no agent".into();
                };
                let new = NewSession {
                    agent_id: agent,
                    ..NewSession::default()
                };
                match self.store.create_session(ACCOUNTS[*acct], &new) {
                    Ok(session) => {
                        self.name(&session.id, "session");
                        self.sessions.push((*acct, session.id.clone()));
                        format!("{session:?}")
                    }
                    Err(e) => format!("Err({:?})", e.kind()),
                }
            }
            Op::Append {
                acct,
                session,
                text,
            } => {
                let Some((_, session)) = Self::pick(&self.sessions, *session) else {
                    return "no session".into();
                };
                let event = MessageEvent::user(TEXTS[*text]).into();
                match self.store.append_event(ACCOUNTS[*acct], &session, &event) {
                    Ok(appended) => {
                        self.name(&appended.id, "event");
                        format!("{appended:?}")
                    }
                    Err(e) => format!("Err({:?})", e.kind()),
                }
            }
            Op::Replay {
                acct,
                session,
                after,
            } => {
                let Some((_, session)) = Self::pick(&self.sessions, *session) else {
                    return "no session".into();
                };
                format!(
                    "{:?}",
                    self.store
                        .events_after(ACCOUNTS[*acct], &session, *after, None)
                        .map_err(|e| e.kind())
                )
            }
            Op::Enqueue {
                acct,
                agent_run,
                interactive,
                delay,
                text,
            } => {
                let id = format!("run-{}", self.runs.len());
                let mut run = NewRun::new(
                    ACCOUNTS[*acct],
                    Kind::Workflow,
                    Origin::Workflow,
                    TEXTS[*text],
                );
                run.id = Some(id.clone());
                if let Some(session) = agent_run.and_then(|s| Self::pick(&self.sessions, s)) {
                    run = NewRun::new(ACCOUNTS[*acct], Kind::Agent, Origin::User, TEXTS[*text]);
                    run.id = Some(id.clone());
                    run.session_id = Some(session.1);
                }
                run.queue = if *interactive {
                    Queue::Interactive
                } else {
                    Queue::Background
                };
                run.not_before = delay.map(|d| self.clock_now() + d);
                self.runs.push(id);
                format!("{:?}", self.store.enqueue_run(&run).map_err(|e| e.kind()))
            }
            Op::Claim { cap } => {
                let limits = ClaimLimits {
                    agent: cap.unwrap_or(u32::MAX),
                    workflow: cap.unwrap_or(u32::MAX),
                };
                match self.store.claim_next_run("worker", limits) {
                    Ok(Some(run)) => {
                        self.claims.push(Claim::of(&run).unwrap());
                        format!("{run:?}")
                    }
                    other => format!("{:?}", other.map_err(|e| e.kind())),
                }
            }
            Op::Start { claim } => {
                let Some(claim) = Self::pick(&self.claims, *claim) else {
                    return "no claim".into();
                };
                format!("{:?}", self.store.start_run(&claim).map_err(|e| e.kind()))
            }
            Op::Finalize { claim, outcome } => {
                let Some(claim) = Self::pick(&self.claims, *claim) else {
                    return "no claim".into();
                };
                let outcome = match outcome {
                    0 => RunOutcome::Succeeded(RunOutput::default()),
                    1 => RunOutcome::Canceled,
                    2 => {
                        let mut error = RunErrorInfo::new("flaky", "try again");
                        error.retryable = Some(true);
                        RunOutcome::Failed(error)
                    }
                    _ => RunOutcome::Failed(RunErrorInfo::new("broken", "no")),
                };
                match self.store.finalize_run(&claim, outcome) {
                    // The backoff's jitter is random on both: only whether it is set.
                    Ok(Finalized::Retrying(mut row)) => {
                        assert!(row.not_before.is_some());
                        row.not_before = None;
                        format!("Retrying({row:?})")
                    }
                    other => format!("{:?}", other.map_err(|e| e.kind())),
                }
            }
            Op::Cancel { acct, run } => {
                let Some(run) = Self::pick(&self.runs, *run) else {
                    return "no run".into();
                };
                format!(
                    "{:?}",
                    self.store
                        .cancel_run_tree(ACCOUNTS[*acct], &run)
                        .map_err(|e| e.kind())
                )
            }
            Op::Listing {
                acct,
                desc,
                pattern,
            } => {
                let order = if *desc { Order::Desc } else { Order::Asc };
                let statement = Query::select()
                    .columns(runs::Column::ALL.iter().copied())
                    .from(runs::Column::Table)
                    .and_where(Expr::col(runs::Column::AccountId).eq(ACCOUNTS[*acct]))
                    .and_where(Expr::col(runs::Column::Title).like(PATTERNS[*pattern]))
                    .order_by(runs::Column::NotBefore, order.clone())
                    .order_by(runs::Column::Id, order)
                    .to_owned();
                let rows = self.store.select::<runs::Row>(&statement);
                format!(
                    "{:?}",
                    rows.map(|rows| rows.into_iter().map(|r| r.id).collect::<Vec<_>>())
                        .map_err(|e| e.kind())
                )
            }
            Op::Advance { ms } => {
                self.clock.advance(*ms);
                String::new()
            }
        };
        // No two writes share a millisecond, so no order rests on ids made at random.
        self.clock.advance(1);
        self.normal(answer)
    }

    fn clock_now(&self) -> i64 {
        use seed_agents_store::clock::Clock;
        self.clock.now_ms()
    }

    /// What the case left: every run (by id) and every session's Log, normalised.
    fn contents(&self) -> String {
        let statement = Query::select()
            .columns(runs::Column::ALL.iter().copied())
            .from(runs::Column::Table)
            .order_by(runs::Column::Id, Order::Asc)
            .to_owned();
        let mut runs: Vec<runs::Row> = self.store.select(&statement).unwrap();
        for run in &mut runs {
            // The backoff's jitter (see `run`).
            if run.status == runs::Status::Queued && run.error_cbor.is_some() {
                run.not_before = run.not_before.map(|_| 0);
            }
        }
        let mut out = format!("{runs:?}");
        for (acct, session) in &self.sessions {
            let events = self
                .store
                .events_after(ACCOUNTS[*acct], session, 0, None)
                .unwrap();
            out.push_str(&format!("\n{session}: {events:?}"));
        }
        self.normal(out)
    }
}

#[test]
fn random_operations_answer_the_same_on_sqlite_and_postgresql() {
    let Some(db) = TempDb::new("differential") else {
        return;
    };
    let pg_clock = ManualClock::new(T0);
    let pg = Store::open_with_clock(&db.url, Arc::new(pg_clock.clone())).unwrap();
    let admin = std::cell::RefCell::new(db.client());
    let dir = tempfile::tempdir().unwrap();
    // One SQLite store too, emptied before each case as the PostgreSQL one is: a new file per
    // case cost more than the case.
    let lite_clock = ManualClock::new(T0);
    let path = dir.path().join("differential.sqlite");
    let lite = Store::open_with_clock(&path, Arc::new(lite_clock.clone())).unwrap();
    let lite_admin = rusqlite::Connection::open(&path).unwrap();
    let cases: u32 = std::env::var("DIFFERENTIAL_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(1_000);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let emptied: Vec<&str> = schema::TABLES
        .iter()
        .copied()
        .filter(|t| *t != "server_config")
        .collect();
    // DELETE is much cheaper than TRUNCATE on tables this small (TRUNCATE gives each table new
    // files); the foreign keys' triggers are off while every table is emptied.
    let empty_pg: String = std::iter::once("SET session_replication_role = replica;".to_string())
        .chain(emptied.iter().map(|t| format!("DELETE FROM {t};")))
        .chain(std::iter::once(
            "SET session_replication_role = DEFAULT;".to_string(),
        ))
        .collect();
    let empty_lite: String = std::iter::once("PRAGMA foreign_keys = OFF; BEGIN;".to_string())
        .chain(emptied.iter().map(|t| format!("DELETE FROM {t};")))
        .chain(std::iter::once(
            "COMMIT; PRAGMA foreign_keys = ON;".to_string(),
        ))
        .collect();
    runner
        .run(&proptest::collection::vec(op(), 1..30), |ops| {
            admin.borrow_mut().batch_execute(&empty_pg).unwrap();
            lite_admin.execute_batch(&empty_lite).unwrap();
            pg_clock.set(T0);
            lite_clock.set(T0);
            let mut sides = [
                Side::new(lite.clone(), lite_clock.clone()),
                Side::new(pg.clone(), pg_clock.clone()),
            ];
            for (i, op) in ops.iter().enumerate() {
                let lite = sides[0].run(op);
                let pg = sides[1].run(op);
                prop_assert_eq!(lite, pg, "operation {} of {:?}", i, ops);
            }
            let (lite, pg) = (sides[0].contents(), sides[1].contents());
            prop_assert_eq!(lite, pg, "the contents after {:?}", ops);
            drop(sides);
            Ok(())
        })
        .unwrap();
    support::backend::say(&format!(
        "{cases} random sequences answered the same on SQLite and PostgreSQL"
    ));
}
