//! Agents, collaborators and the access check; sessions, their lineage, listing, titles, plans
//! and the fields the agent maintains.

use std::collections::HashSet;
use std::sync::Arc;

use seed_agents_store::agents::{Access, NewAgent};
use seed_agents_store::clock::ManualClock;
use seed_agents_store::paging::Cursor;
use seed_agents_store::payload::*;
use seed_agents_store::schema::agent_collaborators::{Role, Status as InviteStatus};
use seed_agents_store::schema::agents::Status;
use seed_agents_store::schema::sessions::{Thoroughness, TitleSource};
use seed_agents_store::sessions::{NewSession, PlanWriter, SessionQuery};
use seed_agents_store::{Error, Store};
use support::backend::open;

const A: &str = "acct-a";
const B: &str = "acct-b";
const C: &str = "acct-c";
const T: i64 = 1_764_000_000_000;

fn new_agent(dir: &str) -> NewAgent {
    NewAgent {
        definition: AgentDefinition::default(),
        state_dir: dir.into(),
        public_read: false,
        public_chat: false,
    }
}

fn session_of(agent: &str) -> NewSession {
    NewSession {
        agent_id: agent.into(),
        ..NewSession::default()
    }
}

fn step(id: &str, status: &str) -> RunPlanStep {
    RunPlanStep {
        id: id.into(),
        label: id.into(),
        status: status.into(),
        resolved_by: None,
        extra: OpenMap::new(),
    }
}

fn plan(steps: Vec<RunPlanStep>) -> RunPlan {
    RunPlan {
        title: Some("plan".into()),
        steps,
        settled_at: None,
        extra: OpenMap::new(),
    }
}

mod collaborators;
mod definitions;
mod sessions;
