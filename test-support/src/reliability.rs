//! Shared parts of the reliability suites: child processes (the test binary re-runs itself with
//! a role in the environment and reports `RESULT ...` lines), a store with an agent and sessions
//! to write to, and the integrity check.

use std::path::Path;
use std::process::{Child, Stdio};

use rusqlite::Connection;
use seed_agents_store::agents::NewAgent;
use seed_agents_store::payload::SessionEventPayload;
use seed_agents_store::payload::{AgentDefinition, MessageEvent};
use seed_agents_store::sessions::NewSession;
use seed_agents_store::Store;

/// The account every reliability suite writes to.
pub const ACCOUNT: &str = "acct-reliability";

/// The environment variable that names a child's role; a test run without it is the parent.
pub const ROLE: &str = "RELIABILITY_ROLE";

/// The role this process plays, when it is a child.
pub fn role() -> Option<String> {
    std::env::var(ROLE).ok()
}

/// Starts this test binary again running only `test`, as a child playing `role`, with `env`
/// added; stdout and stderr are piped.
pub fn spawn(test: &str, role: &str, env: &[(&str, String)]) -> Child {
    let mut cmd = crate::rerun(test);
    cmd.env(ROLE, role)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().expect("spawn a child")
}

/// Opens `path` and creates an agent with `sessions` top-level sessions; returns their ids.
pub fn store_with_sessions(path: &Path, sessions: usize) -> (Store, Vec<String>) {
    let store = Store::open(path).expect("open a fresh store");
    let agent = store
        .create_agent(
            ACCOUNT,
            &NewAgent {
                definition: AgentDefinition::default(),
                state_dir: path.with_extension("agent").display().to_string(),
                public_read: false,
                public_chat: false,
            },
        )
        .expect("create the agent");
    let ids = (0..sessions)
        .map(|_| {
            store
                .create_session(
                    ACCOUNT,
                    &NewSession {
                        agent_id: agent.id.clone(),
                        ..NewSession::default()
                    },
                )
                .expect("create a session")
                .id
        })
        .collect();
    (store, ids)
}

/// A user message with `content`.
pub fn message(content: String) -> SessionEventPayload {
    MessageEvent::user(content).into()
}

/// `PRAGMA integrity_check`'s answer (`ok` for a sound file).
pub fn integrity(conn: &Connection) -> String {
    let rows: Vec<String> = conn
        .prepare("PRAGMA integrity_check")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    rows.join("; ")
}
