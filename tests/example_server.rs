//! The example server (`examples/server`), started on 127.0.0.1 over a temporary database and
//! driven by hand-written HTTP/1.1 requests from concurrent clients: sessions and their event
//! log, the run queue claimed exactly once, and the statuses failures map to. On both backends
//! (`tests/backend`); each server's runtime shuts down while its router still holds the store.

#[path = "../examples/server/app.rs"]
mod app;
mod backend;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::thread;

use seed_agents_store::{AsyncStore, ErrorKind};
use serde_json::{json, Value};

const CLIENTS: usize = 8;
const MESSAGES: i64 = 10;

/// A running server: its address, and the runtime and database that keep it alive.
struct Server {
    addr: SocketAddr,
    _runtime: tokio::runtime::Runtime,
    _dir: tempfile::TempDir,
}

fn start() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let path = backend::location(dir.path(), "agents.sqlite");
    let (listener, store) = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        (listener, AsyncStore::open(path).await.unwrap())
    });
    let addr = listener.local_addr().unwrap();
    runtime.spawn(async move { axum::serve(listener, app::router(store)).await });
    Server {
        addr,
        _runtime: runtime,
        _dir: dir,
    }
}

/// A response: the status and the body as JSON (`Null` when empty).
#[derive(Debug)]
struct Answer {
    status: u16,
    body: Value,
}

/// Sends one request on a fresh connection (`Connection: close`) and reads the whole answer.
fn send(server: &Server, method: &str, path: &str, account: Option<&str>, body: &str) -> Answer {
    let mut stream = TcpStream::connect(server.addr).unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n",
        server.addr
    );
    if let Some(account) = account {
        head.push_str(&format!("{}: {account}\r\n", app::ACCOUNT_HEADER));
    }
    if !body.is_empty() {
        head.push_str("Content-Type: application/json\r\n");
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    parse(&raw)
}

fn parse(raw: &[u8]) -> Answer {
    let text = String::from_utf8(raw.to_vec()).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("a complete head");
    let mut lines = head.lines();
    let status_line = lines.next().unwrap();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("a status line, got {status_line:?}"));
    let chunked = lines.any(|l| l.eq_ignore_ascii_case("transfer-encoding: chunked"));
    let body = if chunked {
        unchunk(body)
    } else {
        body.to_owned()
    };
    let body = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("JSON body ({e}): {body:?}"))
    };
    Answer { status, body }
}

/// Decodes a chunked body (`size\r\ndata\r\n ... 0\r\n\r\n`).
fn unchunk(mut rest: &str) -> String {
    let mut out = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n").expect("a chunk size line");
        let size = usize::from_str_radix(size.trim(), 16).expect("a hex chunk size");
        if size == 0 {
            return out;
        }
        out.push_str(&after[..size]);
        rest = &after[size + 2..];
    }
}

fn post(server: &Server, path: &str, account: Option<&str>, body: Value) -> Answer {
    send(server, "POST", path, account, &body.to_string())
}

fn get(server: &Server, path: &str, account: Option<&str>) -> Answer {
    send(server, "GET", path, account, "")
}

/// Asserts a failure's status and its `error` kind.
fn assert_failure(answer: &Answer, status: u16, kind: ErrorKind) {
    assert_eq!(answer.status, status, "{answer:?}");
    assert_eq!(answer.body["error"], kind.as_str(), "{answer:?}");
    assert!(answer.body["message"].is_string(), "{answer:?}");
}

fn create_session(server: &Server, account: &str) -> String {
    let agent = post(server, "/agents", Some(account), json!({}));
    assert_eq!(agent.status, 201, "{agent:?}");
    let session = post(
        server,
        "/sessions",
        Some(account),
        json!({ "agent_id": agent.body["id"], "title": "chat" }),
    );
    assert_eq!(session.status, 201, "{session:?}");
    assert_eq!(session.body["status"], "idle");
    session.body["id"].as_str().unwrap().to_owned()
}

#[test]
fn concurrent_clients_append_to_their_sessions_and_replay_them() {
    let server = start();
    thread::scope(|scope| {
        for client in 0..CLIENTS {
            let server = &server;
            scope.spawn(move || {
                // Two accounts, shared by several clients each.
                let account = format!("acct-{}", client % 2);
                let session = create_session(server, &account);
                let path = format!("/sessions/{session}/messages");
                for n in 1..=MESSAGES {
                    let text = format!("client {client} message {n}");
                    let appended = post(server, &path, Some(&account), json!({ "content": text }));
                    assert_eq!(appended.status, 201, "{appended:?}");
                    assert_eq!(appended.body["seq"], n);
                }
                let after = 3;
                let replay = get(
                    server,
                    &format!("/sessions/{session}/events?after={after}"),
                    Some(&account),
                );
                assert_eq!(replay.status, 200, "{replay:?}");
                let events = replay.body["events"].as_array().unwrap();
                let seqs: Vec<i64> = events.iter().map(|e| e["seq"].as_i64().unwrap()).collect();
                assert_eq!(seqs, (after + 1..=MESSAGES).collect::<Vec<_>>());
                for event in events {
                    let seq = event["seq"].as_i64().unwrap();
                    assert_eq!(event["type"], "message");
                    assert_eq!(event["role"], "user");
                    assert_eq!(event["content"], format!("client {client} message {seq}"));
                }
                let page = get(
                    server,
                    &format!("/sessions/{session}/events?after=0&limit=2"),
                    Some(&account),
                );
                assert_eq!(page.body["events"].as_array().unwrap().len(), 2);
                // Another account sees no such session.
                let other = get(
                    server,
                    &format!("/sessions/{session}/events"),
                    Some("acct-other"),
                );
                assert_failure(&other, 404, ErrorKind::NotFound);
            });
        }
    });
}

#[test]
fn concurrent_workers_claim_each_run_exactly_once() {
    const RUNS: usize = 24;
    let server = start();
    let enqueued: BTreeSet<String> = thread::scope(|scope| {
        let enqueuers: Vec<_> = (0..CLIENTS)
            .map(|client| {
                let server = &server;
                scope.spawn(move || {
                    (0..RUNS / CLIENTS)
                        .map(|n| {
                            let body = json!({ "title": format!("run {client}.{n}") });
                            let run = post(server, "/runs", Some("acct-runs"), body);
                            assert_eq!(run.status, 201, "{run:?}");
                            assert_eq!(run.body["status"], "queued");
                            run.body["id"].as_str().unwrap().to_owned()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        enqueuers
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect()
    });
    assert_eq!(enqueued.len(), RUNS);

    let claims: Vec<Value> = thread::scope(|scope| {
        let workers: Vec<_> = (0..CLIENTS)
            .map(|worker| {
                let server = &server;
                scope.spawn(move || {
                    let owner = format!("worker-{worker}");
                    let mut mine = Vec::new();
                    loop {
                        let claim = post(server, "/runs/claim", None, json!({ "owner": owner }));
                        if claim.status == 204 {
                            return mine;
                        }
                        assert_eq!(claim.status, 200, "{claim:?}");
                        assert_eq!(claim.body["status"], "claimed");
                        assert_eq!(claim.body["lease_owner"], owner.as_str());
                        let run = &claim.body;
                        let done = post(
                            server,
                            &format!("/runs/{}/finalize", run["id"].as_str().unwrap()),
                            Some(run["account_id"].as_str().unwrap()),
                            json!({ "owner": owner, "attempt": run["attempt"], "outcome": "succeeded" }),
                        );
                        assert_eq!(done.status, 200, "{done:?}");
                        assert_eq!(done.body["result"], "finished");
                        assert_eq!(done.body["run"]["status"], "succeeded");
                        mine.push(claim.body);
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect()
    });
    let claimed: Vec<&str> = claims.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(claimed.len(), RUNS, "every run claimed once, none twice");
    assert_eq!(
        claimed
            .iter()
            .map(|id| id.to_string())
            .collect::<BTreeSet<_>>(),
        enqueued
    );

    // Finalizing again under a claim that no longer holds the run is a conflict.
    let stale = &claims[0];
    let again = post(
        &server,
        &format!("/runs/{}/finalize", stale["id"].as_str().unwrap()),
        Some("acct-runs"),
        json!({ "owner": stale["lease_owner"], "attempt": stale["attempt"], "outcome": "canceled" }),
    );
    assert_failure(&again, 409, ErrorKind::Conflict);
}

#[test]
fn failures_answer_the_status_of_their_kind() {
    let server = start();
    let account = Some("acct-1");
    let missing = post(
        &server,
        "/sessions/no-such-session/messages",
        account,
        json!({ "content": "hi" }),
    );
    assert_failure(&missing, 404, ErrorKind::NotFound);
    let replay = get(&server, "/sessions/no-such-session/events?after=0", account);
    assert_failure(&replay, 404, ErrorKind::NotFound);
    let no_agent = post(
        &server,
        "/sessions",
        account,
        json!({ "agent_id": "no-such-agent" }),
    );
    assert_failure(&no_agent, 404, ErrorKind::NotFound);

    let session = create_session(&server, "acct-1");
    let messages = format!("/sessions/{session}/messages");
    let malformed = send(&server, "POST", &messages, account, "{not json");
    assert_failure(&malformed, 400, ErrorKind::Invalid);
    let wrong_shape = post(&server, &messages, account, json!({ "text": "hi" }));
    assert_failure(&wrong_shape, 400, ErrorKind::Invalid);
    let no_account = post(&server, &messages, None, json!({ "content": "hi" }));
    assert_failure(&no_account, 400, ErrorKind::Invalid);
    let negative = get(
        &server,
        &format!("/sessions/{session}/events?after=-1"),
        account,
    );
    assert_failure(&negative, 400, ErrorKind::Invalid);
    let not_a_number = get(
        &server,
        &format!("/sessions/{session}/events?after=x"),
        account,
    );
    assert_failure(&not_a_number, 400, ErrorKind::Invalid);
    let untitled = post(&server, "/runs", account, json!({ "title": "  " }));
    assert_failure(&untitled, 400, ErrorKind::Invalid);

    let none = post(&server, "/runs/claim", None, json!({ "owner": "worker" }));
    assert_eq!(none.status, 204, "{none:?}");
    let run = post(&server, "/runs", account, json!({ "title": "build" }));
    let claim = post(&server, "/runs/claim", None, json!({ "owner": "worker" }));
    assert_eq!(claim.body["id"], run.body["id"]);
    let finalize = format!("/runs/{}/finalize", run.body["id"].as_str().unwrap());
    let wrong_owner =
        json!({ "owner": "intruder", "attempt": claim.body["attempt"], "outcome": "succeeded" });
    assert_failure(
        &post(&server, &finalize, account, wrong_owner),
        409,
        ErrorKind::Conflict,
    );
    let failed_without_error = json!({ "owner": "worker", "attempt": 1, "outcome": "failed" });
    let answer = post(&server, &finalize, account, failed_without_error);
    assert_failure(&answer, 400, ErrorKind::Invalid);
    let ok = json!({ "owner": "worker", "attempt": claim.body["attempt"], "outcome": "succeeded" });
    assert_eq!(post(&server, &finalize, account, ok).status, 200);
}

#[test]
fn every_kind_has_one_status() {
    let cases = [
        (ErrorKind::NotFound, 404),
        (ErrorKind::Invalid, 400),
        (ErrorKind::Conflict, 409),
        (ErrorKind::Busy, 503),
        (ErrorKind::Refused, 500),
        (ErrorKind::Storage, 500),
        (ErrorKind::Corrupt, 500),
        (ErrorKind::Internal, 500),
    ];
    for (kind, status) in cases {
        assert_eq!(app::status_of(kind).as_u16(), status, "{kind}");
    }
}
