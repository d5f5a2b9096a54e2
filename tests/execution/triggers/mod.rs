//! Triggers, firings, claims, webhook credentials, combination, and activity watermarks.

use seed_agents_store::cbor::Cbor;
use seed_agents_store::payload::*;
use seed_agents_store::runs::{ClaimLimits, NewRun, RunOutcome};
use seed_agents_store::schema::runs::{Kind, Origin};
use seed_agents_store::schema::{trigger_firings, webhook_trigger_credentials};
use seed_agents_store::triggers::*;
use seed_agents_store::Error;
use support::execution::*;

fn filter(kind: &str, doc: &str) -> AgentTriggerSource {
    let mut map = OpenMap::new();
    map.insert("kind".into(), Ipld::String(kind.into()));
    map.insert("document".into(), Ipld::String(doc.into()));
    seed_agents_store::cbor::from_slice(&seed_agents_store::cbor::to_vec(&map).unwrap()).unwrap()
}

fn activity(alternatives: Vec<(&str, AgentTriggerSource)>) -> AgentTriggerSource {
    AgentTriggerSource::Activity(ActivitySource {
        alternatives: alternatives
            .into_iter()
            .map(|(id, source)| ActivityAlternative {
                id: id.into(),
                source,
                extra: OpenMap::new(),
            })
            .collect(),
        extra: OpenMap::new(),
    })
}

fn schedule() -> AgentTriggerSource {
    AgentTriggerSource::Schedule(ScheduleSource {
        schedule: Schedule::Interval(ScheduleInterval {
            interval_ms: 60_000,
            extra: OpenMap::new(),
        }),
        extra: OpenMap::new(),
    })
}

fn webhook() -> AgentTriggerSource {
    AgentTriggerSource::Webhook(WebhookSource::default())
}

fn run_completed() -> AgentTriggerSource {
    AgentTriggerSource::RunCompleted(RunCompletedSource::default())
}

fn new_trigger(name: &str, source: AgentTriggerSource) -> NewTrigger {
    NewTrigger {
        id: None,
        account_id: A.into(),
        agent_id: AGENT.into(),
        name: name.into(),
        enabled: true,
        source,
        prompt: format!("prompt of {name}"),
        continuation: None,
    }
}

fn request(trigger: &str, key: FiringKey) -> FiringRequest {
    FiringRequest {
        account_id: A.into(),
        trigger_id: trigger.into(),
        key,
        activity: TriggerActivity::default(),
        body_digest: None,
        matched: None,
    }
}

fn admitted(admission: Admission) -> trigger_firings::Row {
    match admission {
        Admission::Admitted(row) => row,
        other => panic!("{other:?}"),
    }
}

mod admission;
mod definitions;
mod deletion_combination;
mod webhooks;
