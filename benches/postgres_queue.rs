//! The run queue on PostgreSQL against a plain `FOR UPDATE SKIP LOCKED` queue on the same
//! server, in one run: 8 worker processes (each its own `Store::open(url)`, as separate nodes
//! are) claim and finalize runs, with 1k and with 1M runs queued, with `synchronous_commit` off
//! and on. The plain queue is the textbook one: a table of runs with an index on
//! `(status, created_at)`, a claim that is one `UPDATE ... WHERE id = (SELECT ... LIMIT 1 FOR
//! UPDATE SKIP LOCKED) RETURNING` and a finalize that is one fenced `UPDATE`, both autocommit,
//! in a schema of its own (`plain`) beside the store's.
//!
//! The two sides alternate round by round; each round every worker claims and finalizes
//! [`PER_WORKER`] runs, and the ratio of runs/s is taken within a round. After each round the
//! finished runs are queued again (outside the timing), so a side always sees the same queue.
//! Prints the median ratio per case, and the runs/s of each side.
//!
//! Two more pairs tell the costs apart: the plain queue's statements run on the store's own
//! table (what the schema's columns and indexes cost), and the store's own claim and finalize
//! statements sent by a plain client (what the store's work costs: two queues, delays, one live
//! agent run per session), against the plain queue and against the store.
//!
//! Then appends: 8 worker processes each appending to a session of its own, all 8 sessions of
//! one account and one agent, against 1 process appending alone, in appends/s (interleaved the
//! same way), beside the same for the floor of an append: one autocommit `INSERT` per append
//! into a plain table, which shows how far more processes can go on this machine at all.
//!
//! Last, a stopped node: 7 workers claim and finalize while an 8th node is stopped (SIGSTOP)
//! half way through an append, against the 7 alone.
//!
//! Needs a server: `SEED_AGENTS_BENCH_POSTGRES` (else `SEED_AGENTS_TEST_POSTGRES`) names one
//! whose user may create databases: `scripts/with-postgres.sh cargo bench --features postgres
//! --bench postgres_queue`. Without one it says so and measures nothing. `QUEUE_ROUNDS` sets the
//! rounds per case (default 5), `QUEUE_SIZES` the queue sizes (default `1000,1000000`);
//! `QUEUE_APPENDS_ONLY` skips the claim + finalize cases.

mod pg_common;
#[path = "postgres_queue/plain.rs"]
mod plain;

use pg_common::{fresh_database, server};
use plain::{plain_client, plain_queue, same_work};
use seed_agents_store::cbor::Cbor;
use seed_agents_store::lease::Claim;
use seed_agents_store::payload::{RunInput, RunOutput};
use seed_agents_store::runs::{ClaimLimits, RunOutcome};
use seed_agents_store::Store;
use std::io::{BufRead, Write};
use std::process::{Command, Stdio};
use std::time::Instant;

const WORKERS: usize = 8;
const PER_WORKER: usize = 100;
const T: i64 = 1_764_000_000_000;
/// Set in a worker process: which side it is (`store` or `plain`), then the URL.
const WORKER: &str = "QUEUE_BENCH_WORKER";

/// `n` queued workflow runs in the store's table and as many in the plain queue's.
fn fill(url: &str, n: usize) {
    let store = Store::open(url).unwrap();
    store.touch_account("acct-bench").unwrap();
    drop(store);
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let input = Cbor::encode(&RunInput::default()).unwrap();
    client
        .execute(
            "INSERT INTO runs (id, account_id, root_run_id, depth, kind, origin, title, input_cbor,
               status, attempt, max_attempts, queue, created_at, updated_at)
             SELECT 'r' || g, 'acct-bench', 'r' || g, 0, 'workflow', 'workflow', 'bench', $1,
               'queued', 0, 1, 'background', $2 + g, $2 + g FROM generate_series(1, $3::bigint) g",
            &[&input.as_bytes(), &T, &(n as i64)],
        )
        .unwrap();
    client
        .batch_execute(&format!(
            "CREATE SCHEMA plain;
             CREATE TABLE plain.runs (id bigserial PRIMARY KEY, status text NOT NULL,
               lease_owner text, attempt bigint NOT NULL DEFAULT 0, output bytea,
               created_at bigint NOT NULL, updated_at bigint NOT NULL);
             CREATE INDEX runs_queue ON plain.runs (status, created_at);
             INSERT INTO plain.runs (status, created_at, updated_at)
               SELECT 'queued', {T} + g, {T} + g FROM generate_series(1, {n}) g"
        ))
        .unwrap();
    client.batch_execute("VACUUM ANALYZE").unwrap();
}

/// A client on `url` with `pg_stat_statements` reset, when the server has it loaded
/// (`shared_preload_libraries`); otherwise says how to get it and returns `None`.
fn plan_statistics(url: &str) -> Option<postgres::Client> {
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let ready = client
        .batch_execute(
            "CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset()",
        )
        .is_ok();
    if !ready {
        eprintln!(
            "plans: not counted (start the server with shared_preload_libraries=pg_stat_statements \
             and pg_stat_statements.track_planning=on to count them)"
        );
    }
    ready.then_some(client)
}

/// Prints how often the store's claim and finalize were planned against how often they ran,
/// over every store round of this queue size (each worker process is a connection).
fn plans(client: &mut postgres::Client, queued: usize) {
    for (what, start) in [
        ("claim", "WITH candidate AS"),
        ("finalize", "WITH ended AS"),
    ] {
        let row = client
            .query_one(
                "SELECT coalesce(sum(calls), 0)::bigint, coalesce(sum(plans), 0)::bigint \
                 FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database \
                 WHERE datname = current_database()) AND query LIKE $1 || '%'",
                &[&start],
            )
            .unwrap();
        let (calls, plans): (i64, i64) = (row.get(0), row.get(1));
        eprintln!(
            "{queued:>8} queued: the store's {what} planned {plans} times in {calls} calls \
             (pg_stat_statements, track_planning)"
        );
    }
}

/// Queues again every run the last round finished (untimed).
fn requeue(url: &str) {
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    client
        .batch_execute(
            "UPDATE runs SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL,
               attempt = 0, output_cbor = NULL, started_at = NULL, finished_at = NULL
               WHERE status <> 'queued';
             UPDATE plain.runs SET status = 'queued', lease_owner = NULL, output = NULL
               WHERE status <> 'queued'",
        )
        .unwrap();
    client.batch_execute("VACUUM ANALYZE runs").unwrap();
    client.batch_execute("VACUUM ANALYZE plain.runs").unwrap();
}

/// A worker process: waits for the start line, claims and finalizes `PER_WORKER` runs, prints
/// how long that took in microseconds.
fn worker(side: &str, url: &str, synchronous: bool) {
    let owner = format!("worker-{}", std::process::id());
    let output = RunOutput::default();
    let run: Box<dyn FnMut()> = match side {
        // A node stopped (SIGSTOP) half way through an append: it holds that session's lock,
        // and its transaction stays open, until the round ends and it is killed.
        _ if side.starts_with("stall:") => {
            let session = side["stall:".len()..].to_owned();
            let store = Store::open(url).unwrap();
            Box::new(move || {
                let action = seed_agents_store::idempotency::Action::CreateSession;
                let key = format!("stall-{}", std::process::id());
                let _ = store.idempotent("acct-bench", action, Some(&key), &(), |tx, now| {
                    let event = seed_agents_store::payload::MessageEvent::user("stall").into();
                    seed_agents_store::events::append_event(
                        tx,
                        now,
                        "acct-bench",
                        &session,
                        &event,
                    )?;
                    let me = std::process::id().to_string();
                    Command::new("kill").args(["-STOP", &me]).status().unwrap();
                    Ok(())
                });
            })
        }
        _ if side.starts_with("plain-append:") => {
            let session = side["plain-append:".len()..].to_owned();
            let mut client = plain_client(url, synchronous);
            let insert = client
                .prepare(
                    "INSERT INTO plain.events (session_id, payload, created_at) VALUES ($1, $2, $3)",
                )
                .unwrap();
            let payload = vec![0xa1u8; 40];
            Box::new(move || {
                client.execute(&insert, &[&session, &payload, &T]).unwrap();
            })
        }
        _ if side.starts_with("append:") => {
            let session = side["append:".len()..].to_owned();
            let store = Store::open(url).unwrap();
            if !synchronous {
                store
                    .set_durability(seed_agents_store::Durability::Normal)
                    .unwrap();
            }
            let event: seed_agents_store::payload::SessionEventPayload =
                seed_agents_store::payload::MessageEvent::user("hello").into();
            Box::new(move || {
                store.append_event("acct-bench", &session, &event).unwrap();
            })
        }
        "store" => {
            let store = Store::open(url).unwrap();
            if !synchronous {
                store
                    .set_durability(seed_agents_store::Durability::Normal)
                    .unwrap();
            }
            Box::new(move || {
                let row = store
                    .claim_next_run(&owner, ClaimLimits::default())
                    .unwrap()
                    .expect("a queued run");
                let claim = Claim::of(&row).unwrap();
                store
                    .finalize_run(&claim, RunOutcome::Succeeded(output.clone()))
                    .unwrap();
            })
        }
        "same" => same_work(url, synchronous, owner, &output),
        // The plain queue's two statements on the store's own `runs` table: what the schema
        // (its columns and its nine indexes, each written again by every status change) costs
        // before the store does anything.
        "schema" => plain_queue::<String>(
            url,
            synchronous,
            owner,
            &output,
            "UPDATE runs SET status = 'claimed', lease_owner = $1, lease_expires_at = $2,
               attempt = attempt + 1, updated_at = $2
             WHERE id = (SELECT id FROM runs WHERE status = 'queued'
               AND queue = 'background' AND not_before IS NULL
               ORDER BY not_before NULLS FIRST, created_at, id LIMIT 1
               FOR UPDATE SKIP LOCKED)
             RETURNING id, attempt",
            "UPDATE runs SET status = 'succeeded', output_cbor = $4, lease_owner = NULL,
               lease_expires_at = NULL, finished_at = $5, updated_at = $5
             WHERE id = $1 AND lease_owner = $2 AND attempt = $3
               AND status IN ('claimed', 'running')",
        ),
        _ => plain_queue::<i64>(
            url,
            synchronous,
            owner,
            &output,
            "UPDATE plain.runs SET status = 'claimed', lease_owner = $1,
               attempt = attempt + 1, updated_at = $2
             WHERE id = (SELECT id FROM plain.runs WHERE status = 'queued'
               ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
             RETURNING id, attempt",
            "UPDATE plain.runs SET status = 'succeeded', output = $4, lease_owner = NULL,
               updated_at = $5
             WHERE id = $1 AND lease_owner = $2 AND attempt = $3 AND status = 'claimed'",
        ),
    };
    let mut run = run;
    println!("READY");
    std::io::stdout().flush().unwrap();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).unwrap();
    let started = Instant::now();
    for _ in 0..PER_WORKER {
        run();
    }
    println!("TOOK {}", started.elapsed().as_micros());
}

/// One round of one side: `WORKERS` processes, started together; runs/s over the slowest.
fn round(side: &str, url: &str, synchronous: bool) -> f64 {
    let sides = vec![side.to_owned(); WORKERS];
    round_of(&sides, url, synchronous)
}

/// One round of one process per entry of `sides`, started together; operations/s over the
/// slowest.
fn round_of(sides: &[String], url: &str, synchronous: bool) -> f64 {
    let mut children: Vec<_> = sides
        .iter()
        .map(|side| {
            Command::new(std::env::current_exe().unwrap())
                .env(WORKER, format!("{side} {synchronous} {url}"))
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    // Every worker has opened its store (or connected and prepared) before any starts.
    let mut outputs: Vec<_> = children
        .iter_mut()
        .map(|child| std::io::BufReader::new(child.stdout.take().unwrap()).lines())
        .collect();
    for lines in &mut outputs {
        assert!(lines.map_while(Result::ok).any(|l| l == "READY"));
    }
    let started = Instant::now();
    for child in &mut children {
        writeln!(child.stdin.as_mut().unwrap()).unwrap();
    }
    let mut working = 0;
    for ((child, lines), side) in children.iter_mut().zip(&mut outputs).zip(sides) {
        if side.starts_with("stall:") {
            continue;
        }
        working += 1;
        assert!(lines.map_while(Result::ok).any(|l| l.starts_with("TOOK ")));
        assert!(child.wait().unwrap().success());
    }
    let took = started.elapsed();
    for (child, side) in children.iter_mut().zip(sides) {
        if side.starts_with("stall:") {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
    (working * PER_WORKER) as f64 / took.as_secs_f64()
}

/// 7 workers claiming and finalizing while an 8th node is stopped half way through an append,
/// against the 7 alone.
fn stalled(admin: &str, rounds: usize) {
    let url = fresh_database(admin, "sa_bench_queue");
    fill(&url, 1_000);
    let session = sessions(&Store::open(&url).unwrap(), 1).remove(0);
    let seven = vec!["store".to_owned(); WORKERS - 1];
    let mut with_stalled = seven.clone();
    with_stalled.push(format!("stall:{session}"));
    let (stopped, alone, ratio) = interleave(
        rounds,
        || round_of(&with_stalled, &url, false),
        || round_of(&seven, &url, false),
        || requeue(&url),
    );
    eprintln!(
        "a stopped node: 7 workers with an 8th stopped mid-append {:>6.0} runs/s, alone \
         {:>6.0} runs/s, {:.2} of their throughput (median of {rounds})",
        stopped, alone, ratio,
    );
}

/// 8 processes appending to 8 sessions of one account against 1 process appending alone.
fn appends(admin: &str, rounds: usize) {
    let url = fresh_database(admin, "sa_bench_appends");
    let sessions: Vec<String> = sessions(&Store::open(&url).unwrap(), WORKERS)
        .into_iter()
        .map(|s| format!("append:{s}"))
        .collect();
    // The floor of an append: one autocommit INSERT into a plain table, nothing else.
    postgres::Client::connect(&url, postgres::NoTls)
        .unwrap()
        .batch_execute(
            "CREATE SCHEMA plain;
             CREATE TABLE plain.events (id bigserial PRIMARY KEY, session_id text NOT NULL,
               payload bytea NOT NULL, created_at bigint NOT NULL)",
        )
        .unwrap();
    let plain: Vec<String> = sessions
        .iter()
        .map(|s| s.replace("append:", "plain-append:"))
        .collect();
    for synchronous in [false, true] {
        let (eight, one, ratio) = interleave(
            rounds,
            || round_of(&sessions, &url, synchronous),
            || round_of(&sessions[..1], &url, synchronous),
            || {},
        );
        let (_, _, plain_ratio) = interleave(
            rounds,
            || round_of(&plain, &url, synchronous),
            || round_of(&plain[..1], &url, synchronous),
            || {},
        );
        eprintln!(
            "appends, synchronous_commit {:>3}: 8 processes on 8 sessions of one account {:>6.0}/s, \
             1 process {:>6.0}/s, 8 / 1 {:.2}; a plain INSERT per append, 8 / 1 {:.2} (medians of \
             {rounds})",
            if synchronous { "on" } else { "off" },
            eight, one, ratio, plain_ratio,
        );
    }
}

/// `n` sessions of one new agent of `acct-bench`.
fn sessions(store: &Store, n: usize) -> Vec<String> {
    let agent = store
        .create_agent(
            "acct-bench",
            &seed_agents_store::agents::NewAgent {
                definition: Default::default(),
                state_dir: "/srv/agents/bench".into(),
                public_read: false,
                public_chat: false,
            },
        )
        .unwrap();
    let new = seed_agents_store::sessions::NewSession {
        agent_id: agent.id,
        ..Default::default()
    };
    (0..n)
        .map(|_| store.create_session("acct-bench", &new).unwrap().id)
        .collect()
}

/// `a` and `b` alternately, `rounds` times each, `a` first in even rounds, with `between` after
/// each: the medians of `a`, of `b` and of `a / b` within a round.
fn interleave(
    rounds: usize,
    mut a: impl FnMut() -> f64,
    mut b: impl FnMut() -> f64,
    mut between: impl FnMut(),
) -> (f64, f64, f64) {
    let (mut first, mut second, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..rounds {
        let mut took = [0.0; 2];
        for k in 0..2 {
            let side = (r + k) % 2;
            took[side] = if side == 0 { a() } else { b() };
            between();
        }
        first.push(took[0]);
        second.push(took[1]);
        ratios.push(took[0] / took[1]);
    }
    (median(first), median(second), median(ratios))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    if let Ok(spec) = std::env::var(WORKER) {
        let mut parts = spec.splitn(3, ' ');
        let (side, synchronous, url) = (
            parts.next().unwrap().to_owned(),
            parts.next().unwrap() == "true",
            parts.next().unwrap().to_owned(),
        );
        return worker(&side, &url, synchronous);
    }
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo bench --list`, and `cargo test --benches`, run nothing here
    }
    let Some(admin) = server() else {
        eprintln!("postgres_queue: no server (set SEED_AGENTS_BENCH_POSTGRES); nothing measured");
        return;
    };
    let rounds: usize = std::env::var("QUEUE_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let sizes: Vec<usize> = std::env::var("QUEUE_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1_000, 1_000_000]);
    eprintln!(
        "claim + finalize, {WORKERS} worker processes x {PER_WORKER} runs, store against a \
         plain SKIP LOCKED queue, interleaved, {rounds} rounds:"
    );
    if std::env::var("QUEUE_APPENDS_ONLY").is_err() {
        queue(&admin, rounds, sizes);
    }
    appends(&admin, rounds);
    stalled(&admin, rounds);
}

/// The claim + finalize cases.
fn queue(admin: &str, rounds: usize, sizes: Vec<usize>) {
    for queued in sizes {
        let url = fresh_database(admin, "sa_bench_queue");
        fill(&url, queued);
        let statistics = plan_statistics(&url);
        for synchronous in [false, true] {
            let (store, plain, ratio) = interleave(
                rounds,
                || round("store", &url, synchronous),
                || round("plain", &url, synchronous),
                || requeue(&url),
            );
            let (schema, plain_again, schema_ratio) = interleave(
                rounds,
                || round("schema", &url, synchronous),
                || round("plain", &url, synchronous),
                || requeue(&url),
            );
            let (same, plain_same, same_ratio) = interleave(
                rounds,
                || round("same", &url, synchronous),
                || round("plain", &url, synchronous),
                || requeue(&url),
            );
            let (store_again, same_again, store_same) = interleave(
                rounds,
                || round("store", &url, synchronous),
                || round("same", &url, synchronous),
                || requeue(&url),
            );
            let sync = if synchronous { "on" } else { "off" };
            eprintln!(
                "{queued:>8} queued, synchronous_commit {sync:>3}: store {store:>6.0} runs/s, \
                 plain {plain:>6.0} runs/s, store / plain {ratio:.2}\n\
                 {:>8} the plain statements on the store's table {schema:>6.0} runs/s against \
                 plain {plain_again:>6.0}, {schema_ratio:.2}\n\
                 {:>8} the store's statements from a plain client {same:>6.0} runs/s against \
                 plain {plain_same:>6.0}, {same_ratio:.2}\n\
                 {:>8} the store {store_again:>6.0} runs/s against its statements from a plain \
                 client {same_again:>6.0}, {store_same:.2} (medians of {rounds})",
                "", "", "",
            );
        }
        if let Some(mut client) = statistics {
            plans(&mut client, queued);
        }
    }
}
