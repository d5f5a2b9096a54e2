//! The example server (`examples/server`), started on 127.0.0.1 over a temporary database and
//! driven by hand-written HTTP/1.1 requests from concurrent clients: sessions and their event
//! log, the run queue claimed exactly once, the statuses failures map to, and the server-sent
//! event streams of a session and a run tree fed by a writer in another process. On both backends
//! (`support::backend`); each server's runtime shuts down while its router still holds the store.

#[path = "../../examples/server/app.rs"]
mod app;

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
    /// Where its store is (a file, or a PostgreSQL database's URL).
    path: std::path::PathBuf,
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
    let path = support::backend::location(dir.path(), "agents.sqlite");
    let (listener, store) = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        (listener, AsyncStore::open(&path).await.unwrap())
    });
    let addr = listener.local_addr().unwrap();
    runtime.spawn(async move { axum::serve(listener, app::router(store)).await });
    Server {
        addr,
        path,
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

/// The writer process of the stream tests: this binary's `writer` test, run with a role.
const WRITER_ROLE: &str = "EXAMPLE_SERVER_WRITER";
const WRITER_DB: &str = "EXAMPLE_SERVER_DB";

/// Another process writing to the server's store directly (on PostgreSQL, another node):
/// `events <account> <session> <n>` appends `n` messages; `journal <account> <run> <n>`
/// claims the run and appends `n` journal entries.
#[test]
fn writer() {
    use seed_agents_store::payload::{
        JournalEntryBody, MessageEvent, OpenMap, WorkflowJournalEntry,
    };
    let Ok(role) = std::env::var(WRITER_ROLE) else {
        return;
    };
    let store = seed_agents_store::Store::open(std::env::var(WRITER_DB).unwrap()).unwrap();
    let words: Vec<&str> = role.split(' ').collect();
    let wait = || thread::sleep(std::time::Duration::from_millis(5));
    match words.as_slice() {
        ["events", account, session, n] => {
            for i in 1..=n.parse().unwrap() {
                let event = MessageEvent::user(format!("from afar {i}")).into();
                store.append_event(account, session, &event).unwrap();
                wait();
            }
        }
        ["journal", account, run, n] => {
            let row = store
                .claim_run(account, run, "far-worker")
                .unwrap()
                .unwrap();
            let claim = seed_agents_store::lease::Claim::of(&row).unwrap();
            for call_seq in 1..=n.parse().unwrap() {
                let entry = WorkflowJournalEntry::Log(JournalEntryBody {
                    call_seq,
                    key: None,
                    extra: OpenMap::new(),
                });
                store.append_journal(&claim, &entry).unwrap();
                wait();
            }
        }
        _ => panic!("unknown role {role}"),
    }
}

/// Runs the [`writer`] test in another process with `role`.
fn spawn_writer(server: &Server, role: &str) -> std::process::Child {
    support::rerun(&support::child_test!("writer"))
        .env(WRITER_ROLE, role)
        .env(WRITER_DB, &server.path)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// A server-sent-events response read as it arrives: its status, then one event at a time.
struct Events {
    stream: TcpStream,
    /// Bytes received and not yet decoded from their chunks.
    raw: Vec<u8>,
    /// Decoded text not yet split into events.
    text: String,
}

impl Events {
    fn open(server: &Server, path: &str, account: &str, extra: &str) -> (u16, Events) {
        let mut stream = TcpStream::connect(server.addr).unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(20)))
            .unwrap();
        let head = format!(
            "GET {path} HTTP/1.1\r\nHost: {}\r\n{}: {account}\r\n{extra}\r\n",
            server.addr,
            app::ACCOUNT_HEADER
        );
        stream.write_all(head.as_bytes()).unwrap();
        let mut events = Events {
            stream,
            raw: Vec::new(),
            text: String::new(),
        };
        let head_end = loop {
            if let Some(at) = events.raw.windows(4).position(|w| w == b"\r\n\r\n") {
                break at;
            }
            events.fill();
        };
        let head = String::from_utf8(events.raw[..head_end].to_vec()).unwrap();
        events.raw.drain(..head_end + 4);
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        if status == 200 {
            assert!(
                head.to_ascii_lowercase().contains("text/event-stream"),
                "{head}"
            );
        }
        (status, events)
    }

    fn fill(&mut self) {
        let mut buf = [0; 4096];
        let n = self
            .stream
            .read(&mut buf)
            .expect("more of the stream in time");
        assert!(n > 0, "the server closed the stream");
        self.raw.extend_from_slice(&buf[..n]);
    }

    /// The next event's name and data, skipping keep-alive comments.
    fn next(&mut self) -> (String, Value) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            assert!(std::time::Instant::now() < deadline, "no event within 20 s");
            if let Some(at) = self.text.find("\n\n") {
                let frame: String = self.text.drain(..at + 2).collect();
                let mut name = String::from("message");
                let mut data = String::new();
                for line in frame.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        name = v.trim().to_owned();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.trim());
                    }
                }
                if data.is_empty() {
                    continue; // a comment (keep-alive)
                }
                return (name, serde_json::from_str(&data).unwrap());
            }
            self.decode_chunk();
        }
    }

    /// Moves one whole chunk from `raw` to `text`, reading until there is one.
    fn decode_chunk(&mut self) {
        loop {
            if let Some(line) = self.raw.windows(2).position(|w| w == b"\r\n") {
                let size = std::str::from_utf8(&self.raw[..line]).unwrap();
                let size = usize::from_str_radix(size.trim(), 16).unwrap();
                if self.raw.len() >= line + 2 + size + 2 {
                    let chunk = self.raw[line + 2..line + 2 + size].to_vec();
                    self.raw.drain(..line + 2 + size + 2);
                    self.text.push_str(&String::from_utf8(chunk).unwrap());
                    return;
                }
            }
            self.fill();
        }
    }
}

#[test]
fn a_session_stream_replays_then_carries_another_processs_appends_and_resumes() {
    let server = start();
    let account = "acct-sse";
    let session = create_session(&server, account);
    let path = format!("/sessions/{session}/messages");
    for n in 1..=3 {
        let sent = post(
            &server,
            &path,
            Some(account),
            json!({ "content": format!("m{n}") }),
        );
        assert_eq!(sent.status, 201);
    }
    let stream = format!("/sessions/{session}/events/stream?after=1");
    let (status, mut events) = Events::open(&server, &stream, account, "");
    assert_eq!(status, 200);
    let mut writer = spawn_writer(&server, &format!("events {account} {session} 5"));
    let mut last = Value::Null;
    for seq in 2..=8 {
        let (name, data) = events.next();
        assert_eq!(name, "append");
        assert_eq!(data["seq"], seq, "{data}");
        last = data;
    }
    assert!(writer.wait().unwrap().success());
    assert_eq!(last["content"], "from afar 5");
    // A reconnect with Last-Event-ID resumes after it.
    let (_, mut resumed) = Events::open(&server, &stream, account, "Last-Event-ID: 6\r\n");
    assert_eq!(resumed.next().1["seq"], 7);
    assert_eq!(resumed.next().1["seq"], 8);
    // Another account's session is not found; a deletion ends the stream with `end`.
    let (status, _) = Events::open(&server, &stream, "acct-other", "");
    assert_eq!(status, 404);
    let store = seed_agents_store::Store::open(&server.path).unwrap();
    store.delete_session(account, &session).unwrap();
    let (name, data) = resumed.next();
    assert_eq!(name, "end", "{data}");
    assert_eq!(data["error"], "not_found");
}

#[test]
fn a_run_tree_stream_carries_the_journal_another_process_writes() {
    let server = start();
    let account = "acct-sse";
    let run = post(
        &server,
        "/runs",
        Some(account),
        json!({ "title": "script" }),
    );
    assert_eq!(run.status, 201);
    let run_id = run.body["id"].as_str().unwrap().to_owned();
    let stream = format!("/runs/{run_id}/journal/stream");
    let (status, mut entries) = Events::open(&server, &stream, account, "");
    assert_eq!(status, 200);
    let mut writer = spawn_writer(&server, &format!("journal {account} {run_id} 4"));
    for seq in 1..=4 {
        let (name, data) = entries.next();
        assert_eq!(name, "append");
        assert_eq!(
            (data["run_id"].as_str(), data["seq"].as_i64()),
            (Some(&*run_id), Some(seq))
        );
        assert_eq!(data["entry"]["kind"], "log", "{data}");
    }
    assert!(writer.wait().unwrap().success());
    // Replayed on subscribe.
    let (_, mut replay) = Events::open(&server, &stream, account, "");
    assert_eq!(replay.next().1["seq"], 1);
    let (status, _) = Events::open(&server, "/runs/no-such-run/journal/stream", account, "");
    assert_eq!(status, 404);
}
