//! The Log: seq allocation (contiguous, across threads and across processes), the activity
//! rollups, replay after a seq, and the event payloads against hand-built canonical DAG-CBOR.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use seed_agents_store::agents::NewAgent;
use seed_agents_store::cbor;
use seed_agents_store::clock::ManualClock;
use seed_agents_store::events::event_actor;
use seed_agents_store::payload::*;
use seed_agents_store::sessions::NewSession;
use seed_agents_store::{Error, Store};

const A: &str = "acct-a";
const T: i64 = 1_764_000_000_000;

fn store_at(path: &Path) -> (Store, ManualClock) {
    let clock = ManualClock::new(T);
    let store = Store::open_with_clock(path, Arc::new(clock.clone())).unwrap();
    (store, clock)
}

/// A store with one agent and one top-level session; returns (store, clock, agent, session).
fn fixture(path: &Path) -> (Store, ManualClock, String, String) {
    let (store, clock) = store_at(path);
    let agent = store
        .create_agent(
            A,
            &NewAgent {
                definition: AgentDefinition::default(),
                state_dir: path.with_extension("agent").display().to_string(),
                public_read: false,
                public_chat: false,
            },
        )
        .unwrap();
    let session = store
        .create_session(
            A,
            &NewSession {
                agent_id: agent.id.clone(),
                ..NewSession::default()
            },
        )
        .unwrap();
    (store, clock, agent.id, session.id)
}

fn message(role: MessageRole, content: &str, actor: Option<SessionActor>) -> SessionEventPayload {
    MessageEvent {
        actor,
        ..MessageEvent::new(role, content)
    }
    .into()
}

fn tool_call(id: &str) -> SessionEventPayload {
    SessionEventPayload::ToolCall(ToolCallEvent {
        id: id.into(),
        name: "read".into(),
        input: Ipld::Map(BTreeMap::new()),
        actor: None,
        extra: OpenMap::new(),
    })
}

fn seqs(store: &Store, session: &str) -> Vec<i64> {
    store
        .events_after(A, session, 0, None)
        .unwrap()
        .iter()
        .map(|e| e.seq)
        .collect()
}

mod payloads;
mod replay;
mod rollups;
mod seqs;
