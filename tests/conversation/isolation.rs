//! Every operation on an account's row checks the account.
//!
//! Two accounts get the same full set of rows (agents, sessions with events, runs queued, running,
//! waiting on an event, on children and on a budget, journal entries, triggers with firings and
//! claims, a webhook credential, tool documents, drafts, an MCP server with its owned secret,
//! secrets, providers, watermarks, idempotency records, collaborators, signers, continuations).
//! Then account B calls every account-scoped method naming A's rows, directly or nested inside its
//! own request. Each call must:
//! - answer exactly what it answers for an id nobody has (the same `NotFound`, or the same empty
//!   read), so the answer never reveals that A's row exists;
//! - leave every table byte for byte as it was. The snapshot covers every table `sqlite_schema`
//!   lists, all rows and all columns, so a table added later is covered without touching this
//!   file; only the audit log may grow, by the refusal of B naming A's row (never for an id
//!   nobody has).
//!
//! The frame (ids, setup, snapshot, probe) is in `support::isolation`; the calls that claimed-run
//! workers make are in `support::isolation::worker`, since their signatures are about to take
//! the worker's claim.

use seed_agents_store::idempotency::Action;
use seed_agents_store::payload::*;
use seed_agents_store::schema::agent_collaborators::Role;
use seed_agents_store::schema::agents::Status as AgentStatus;
use seed_agents_store::schema::sessions::TitleSource;
use seed_agents_store::schema::trigger_firings;
use seed_agents_store::sessions::{PlanWriter, SessionQuery};
use seed_agents_store::triggers::{
    CombineTriggers, FiringKey, FiringRequest, FiringUpdate, TriggerPatch,
};
use seed_agents_store::waits::DeliverySource;
use seed_agents_store::Error;
use support::case;
use support::isolation::setup::{continuation, draft_fields, mcp_input, new_session, trigger};
use support::isolation::worker::workflow;
use support::isolation::{run_cases, snapshot, world, Case, B, C, D, T};
use support::tools::{builtin, lambda};

// ---------------------------------------------------------------------------------------------
// The probes

fn cases() -> Vec<Case> {
    vec![
        // Agents and collaborators.
        case!("agent", "Ok(None)", |s, a, _| s.agent(B, &a.agent)),
        case!("update_agent_definition", "NotFound(agent)", |s, a, _| s
            .update_agent_definition(
                B,
                &a.agent,
                &AgentDefinition::default()
            )),
        case!("set_agent_visibility", "NotFound(agent)", |s, a, _| s
            .set_agent_visibility(B, &a.agent, Some(true), Some(true))),
        case!("set_agent_status", "NotFound(agent)", |s, a, _| s
            .set_agent_status(B, &a.agent, AgentStatus::Stopped)),
        case!("delete_agent", "NotFound(agent)", |s, a, _| s
            .delete_agent(B, &a.agent)),
        case!("access", "NotFound(agent)", |s, a, _| s.access(&a.agent, B)),
        case!("invite_collaborator", "NotFound(agent)", |s, a, _| s
            .invite_collaborator(B, &a.agent, D, Role::Writer)),
        case!("accept_invitation", "NotFound(invitation)", |s, a, _| s
            .accept_invitation(B, &a.agent)),
        case!("set_collaborator_role", "NotFound(agent)", |s, a, _| s
            .set_collaborator_role(B, &a.agent, C, Role::Reader)),
        case!("remove_collaborator", "NotFound(agent)", |s, a, _| s
            .remove_collaborator(B, &a.agent, C)),
        case!("collaborators", "NotFound(agent)", |s, a, _| s
            .collaborators(B, &a.agent)),
        // Sessions.
        case!("create_session: agent", "NotFound(agent)", |s, a, _| s
            .create_session(B, &new_session(&a.agent, None))),
        case!("create_session: parent", "NotFound(session)", |s, a, b| s
            .create_session(B, &new_session(&b.agent, Some(&a.session)))),
        case!("session", "Ok(None)", |s, a, _| s.session(B, &a.session)),
        case!(
            "sessions",
            "Ok(Page { items: [], next: None })",
            |s, a, _| s.sessions(
                B,
                &a.agent,
                &SessionQuery {
                    include_children: true,
                    ..SessionQuery::default()
                }
            )
        ),
        case!("child_sessions", "Ok([])", |s, a, _| s
            .child_sessions(B, &a.session)),
        case!("set_session_title", "NotFound(session)", |s, a, _| s
            .set_session_title(B, &a.session, "mine", TitleSource::User)),
        case!("set_session_plan", "NotFound(session)", |s, a, _| s
            .set_session_plan(B, &a.session, None, PlanWriter::Runtime)),
        case!(
            "set_session_model_override",
            "NotFound(session)",
            |s, a, _| s.set_session_model_override(B, &a.session, None)
        ),
        case!("set_session_description", "NotFound(session)", |s, a, _| s
            .set_session_description(B, &a.session, Some("mine"))),
        case!(
            "set_session_thoroughness",
            "NotFound(session)",
            |s, a, _| s.set_session_thoroughness(B, &a.session, None)
        ),
        case!("delete_session", "NotFound(session)", |s, a, _| s
            .delete_session(B, &a.session)),
        // The Log.
        case!("append_event", "NotFound(session)", |s, a, _| s
            .append_event(
                B,
                &a.session,
                &support::isolation::setup::message("from b")
            )),
        case!("events::append_event", "NotFound(session)", |s, a, _| {
            let now = s.now_ms();
            // The building block runs inside a transaction the caller opened on its own
            // connection (the store's is read-only); dropping it rolls back.
            let mut conn = rusqlite::Connection::open(s.path()).unwrap();
            let tx = conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                .unwrap();
            seed_agents_store::events::append_event(
                &seed_agents_store::Db::sqlite(&tx),
                now,
                B,
                &a.session,
                &support::isolation::setup::message("from b"),
            )
        }),
        case!("events_after", "Ok([])", |s, a, _| s
            .events_after(B, &a.session, 0, None)),
        // Continuations.
        case!(
            "continue_session_with: predecessor",
            "NotFound(session)",
            |s, a, b| {
                let agent = b.agent.clone();
                s.continue_session_with(B, &continuation(&a.session, "probe"), |conn, now| {
                    let new = new_session(&agent, None);
                    Ok(seed_agents_store::sessions::create_session(conn, now, B, &new)?.id)
                })
            }
        ),
        case!(
            "record_continuation: predecessor",
            "NotFound(session)",
            |s, a, b| s.record_continuation(
                B,
                &continuation(&a.session, &a.continuation_call),
                &b.child_session
            )
        ),
        case!(
            "record_continuation: successor",
            "NotFound(session)",
            |s, a, b| s.record_continuation(
                B,
                &continuation(&b.session, "probe"),
                &a.successor_session
            )
        ),
        case!("continuation_for_call", "Ok(None)", |s, a, _| s
            .continuation_for_call(B, &a.session, &a.continuation_call)),
        case!("continuation_of", "Ok(None)", |s, a, _| s
            .continuation_of(B, &a.successor_session)),
        case!("continuation_chain", "Ok([])", |s, a, _| s
            .continuation_chain(B, &a.session)),
        // Drafts.
        case!("create_draft: agent", "NotFound(agent)", |s, a, _| s
            .create_draft(B, Some(&a.agent), &draft_fields(None))),
        case!("create_draft: signer", "NotFound(secret)", |s, a, _| s
            .create_draft(B, None, &draft_fields(Some(&a.secret)))),
        case!("update_draft: signer", "NotFound(secret)", |s, a, b| s
            .update_draft(B, &b.draft, &draft_fields(Some(&a.secret)))),
        case!("update_draft", "NotFound(draft)", |s, a, _| s.update_draft(
            B,
            &a.draft,
            &draft_fields(None)
        )),
        case!("publish_draft", "NotFound(draft)", |s, a, _| s
            .publish_draft(B, &a.draft, "hm://published", "v1")),
        case!("draft", "Ok(None)", |s, a, _| s.draft(B, &a.draft)),
        case!("agent_drafts", "Ok([])", |s, a, _| s
            .agent_drafts(B, &a.agent)),
        case!("delete_draft", "Ok(false)", |s, a, _| s
            .delete_draft(B, &a.draft)),
        // Providers, secrets, signers, watermarks, idempotency.
        case!("provider", "Ok(None)", |s, a, _| s.provider(B, &a.provider)),
        case!("provider_by_name", "Ok(None)", |s, a, _| s
            .provider_by_name(B, &a.provider_name)),
        case!("update_provider", "NotFound(model provider)", |s, a, _| s
            .update_provider(
                B,
                &a.provider,
                None,
                &ModelProviderConfig::new("other")
            )),
        case!("delete_provider", "Ok(false)", |s, a, _| s
            .delete_provider(B, &a.provider)),
        case!("secret", "Ok(None)", |s, a, _| s.secret(B, &a.secret)),
        case!("decrypt_secret", "NotFound(secret)", |s, a, _| s
            .decrypt_secret(B, &a.secret)),
        case!("delete_secret", "Ok(false)", |s, a, _| s
            .delete_secret(B, &a.secret)),
        case!("is_authorized_signer", "Ok(false)", |s, a, _| s
            .is_authorized_signer(B, &a.signer)),
        case!("revoke_signer", "Ok(false)", |s, a, _| s
            .revoke_signer(B, &a.signer)),
        case!("watermark", "Ok(None)", |s, a, _| s
            .watermark(B, &a.watermark_url)),
        case!("idempotent_replay", "Ok(None)", |s, a, _| s
            .idempotent_replay::<_, u64>(
                B,
                Action::MessageSession,
                &a.client_id,
                &a.session
            )),
        // MCP servers and tools.
        case!("mcp_server", "Ok(None)", |s, a, _| s
            .mcp_server(B, &a.mcp_server)),
        case!("update_mcp_server", "NotFound(MCP server)", |s, a, _| s
            .update_mcp_server(B, &a.mcp_server, &mcp_input("b"))),
        case!(
            "set_mcp_server_enabled",
            "NotFound(MCP server)",
            |s, a, _| s.set_mcp_server_enabled(B, &a.mcp_server, false)
        ),
        case!("record_mcp_discovery", "NotFound(MCP server)", |s, a, _| s
            .record_mcp_discovery(B, &a.mcp_server, Err("down".into()))),
        case!("delete_mcp_server", "NotFound(MCP server)", |s, a, _| s
            .delete_mcp_server(B, &a.mcp_server)),
        case!(
            "sync_mcp_tools",
            "Ok(ToolSync { inserted: 0, rewritten: 0, deleted: 0, shadowed: [] })",
            |s, a, _| s.sync_mcp_tools(B, Some(&a.agent))
        ),
        case!("ensure_builtin_tools", "NotFound(agent)", |s, a, _| s
            .ensure_builtin_tools(
                B,
                &a.agent,
                &[builtin("write", "fs.write")]
            )),
        case!("put_lambda_tool", "NotFound(agent)", |s, a, _| s
            .put_lambda_tool(B, &a.agent, &lambda("probe"))),
        case!("agent_tools", "NotFound(agent)", |s, a, _| s.agent_tools(
            B,
            &a.agent,
            &[builtin("read", "fs.read")]
        )),
        case!("set_tool_enabled", "NotFound(tool)", |s, a, _| s
            .set_tool_enabled(B, &a.agent, &a.lambda, false)),
        case!("delete_tool", "Ok(false)", |s, a, _| s
            .delete_tool(B, &a.agent, &a.lambda)),
        case!("tool", "Ok(None)", |s, a, _| s.tool(B, &a.agent, &a.lambda)),
        // Triggers, firings, webhooks.
        case!("create_trigger: agent", "NotFound(agent)", |s, a, _| s
            .create_trigger(&trigger(
                B,
                &a.agent,
                "probe",
                AgentTriggerSource::Webhook(WebhookSource::default())
            ))),
        case!("trigger", "Ok(None)", |s, a, _| s
            .trigger(B, &a.schedule_trigger)),
        case!("update_trigger", "NotFound(trigger)", |s, a, _| s
            .update_trigger(
                B,
                &a.schedule_trigger,
                &TriggerPatch {
                    prompt: Some("mine".into()),
                    ..TriggerPatch::default()
                }
            )),
        case!("set_trigger_enabled", "NotFound(trigger)", |s, a, _| s
            .set_trigger_enabled(B, &a.schedule_trigger, false)),
        case!("triggers", "Ok([])", |s, a, _| s.triggers(B, &a.agent)),
        case!("delete_trigger", "Ok(false)", |s, a, _| s
            .delete_trigger(B, &a.schedule_trigger)),
        case!(
            "combine_triggers: retired",
            "NotFound(trigger)",
            |s, a, b| s.combine_triggers(
                B,
                &CombineTriggers {
                    survivor_id: b.activity_trigger.clone(),
                    retired_id: a.activity_trigger.clone(),
                    ..CombineTriggers::default()
                }
            )
        ),
        case!(
            "combine_triggers: survivor",
            "NotFound(trigger)",
            |s, a, b| s.combine_triggers(
                B,
                &CombineTriggers {
                    survivor_id: a.other_activity_trigger.clone(),
                    retired_id: b.other_activity_trigger.clone(),
                    ..CombineTriggers::default()
                }
            )
        ),
        case!("admit_firing: schedule", "NotFound(trigger)", |s, a, _| s
            .admit_firing(&FiringRequest {
                account_id: B.into(),
                trigger_id: a.schedule_trigger.clone(),
                key: FiringKey::Schedule {
                    scheduled_at: T + 1
                },
                activity: TriggerActivity::default(),
                body_digest: None,
                matched: None,
            })),
        case!("admit_firing: activity", "NotFound(trigger)", |s, a, _| s
            .admit_firing(&FiringRequest {
                account_id: B.into(),
                trigger_id: a.activity_trigger.clone(),
                key: FiringKey::Activity {
                    key: "comment-a".into()
                },
                activity: TriggerActivity::default(),
                body_digest: None,
                matched: None,
            })),
        case!("admit_webhook", "NotFound(trigger)", |s, a, _| s
            .admit_webhook(
                B,
                &a.webhook_trigger,
                Some("delivery-1"),
                b"{}",
                TriggerActivity::default()
            )),
        case!("update_firing", "NotFound(firing)", |s, a, _| s
            .update_firing(
                B,
                &a.firing,
                &FiringUpdate {
                    status: trigger_firings::Status::Failed,
                    error: Some("mine".into()),
                    session_id: None,
                    run_id: None,
                }
            )),
        case!("update_firing: session", "NotFound(session)", |s, a, b| s
            .update_firing(
                B,
                &b.firing,
                &FiringUpdate {
                    status: trigger_firings::Status::Started,
                    error: None,
                    session_id: Some(a.session.clone()),
                    run_id: None,
                }
            )),
        case!("update_firing: run", "NotFound(run)", |s, a, b| s
            .update_firing(
                B,
                &b.firing,
                &FiringUpdate {
                    status: trigger_firings::Status::Started,
                    error: None,
                    session_id: None,
                    run_id: Some(a.firing_run.clone()),
                }
            )),
        case!("firings", "Ok([])", |s, a, _| s
            .firings(B, &a.schedule_trigger)),
        case!("trigger_claims", "Ok([])", |s, a, _| s
            .trigger_claims(B, &a.activity_trigger)),
        case!(
            "webhook_secret",
            "NotFound(webhook credential)",
            |s, a, _| s.webhook_secret(B, &a.webhook_trigger)
        ),
        case!("verify_webhook_secret", "Ok(false)", |s, a, _| s
            .verify_webhook_secret(
                B,
                &a.webhook_trigger,
                &a.webhook_secret
            )),
        case!(
            "rotate_webhook_secret",
            "NotFound(webhook credential)",
            |s, a, _| s.rotate_webhook_secret(B, &a.webhook_trigger)
        ),
        // Runs, journals and waits, outside the claimed-run worker writes.
        case!("enqueue_run: parent", "NotFound(parent run)", |s, a, b| {
            let mut run = workflow(B, &b.agent, "probe");
            run.parent_run_id = Some(a.parent_run.clone());
            s.enqueue_run(&run)
        }),
        case!("enqueue_run: agent", "NotFound(agent)", |s, a, _| s
            .enqueue_run(&workflow(B, &a.agent, "probe"))),
        case!("enqueue_run: session", "NotFound(session)", |s, a, b| {
            let mut run = workflow(B, &b.agent, "probe");
            run.session_id = Some(a.session.clone());
            s.enqueue_run(&run)
        }),
        case!(
            "enqueue_run: trigger firing",
            "NotFound(trigger firing)",
            |s, a, b| {
                let mut run = workflow(B, &b.agent, "probe");
                run.trigger_firing_id = Some(a.firing.clone());
                s.enqueue_run(&run)
            }
        ),
        case!("run", "Ok(None)", |s, a, _| s.run(B, &a.running_run)),
        case!("run_tree", "Ok([])", |s, a, _| s.run_tree(B, &a.parent_run)),
        case!("session_runs", "Ok([])", |s, a, _| s
            .session_runs(B, &a.session)),
        case!("find_child_by_tool_call", "Ok(None)", |s, a, _| s
            .find_child_by_tool_call(B, &a.parent_run, &a.child_call)),
        case!("claim_run", "NotFound(run)", |s, a, _| s.claim_run(
            B,
            &a.queued_run,
            "thief"
        )),
        case!("requeue_run", "NotFound(run)", |s, a, _| s
            .requeue_run(B, &a.waiting_run)),
        case!("resolve_child", "NotFound(run)", |s, a, _| s.resolve_child(
            B,
            &a.parent_run,
            &a.child_call
        )),
        case!("resume_budget_pause", "NotFound(run)", |s, a, _| s
            .resume_budget_pause(B, &a.paused_run)),
        case!("cancel_run_tree", "NotFound(run)", |s, a, _| s
            .cancel_run_tree(B, &a.parent_run)),
        case!("load_journal", "NotFound(run)", |s, a, _| s.load_journal(
            B,
            &a.running_run,
            0
        )),
        case!("run_waits", "Ok([])", |s, a, _| s
            .run_waits(B, &a.waiting_run)),
        case!("deliver_signal: to a run", "Ok(NotDelivered)", |s, a, _| s
            .deliver_signal(
                B,
                Some(&a.waiting_run),
                DeliverySource::Signal,
                &a.signal,
                None
            )),
        case!(
            "deliver_signal: to any run",
            "Ok(NotDelivered)",
            |s, a, _| s.deliver_signal(B, None, DeliverySource::Signal, &a.signal, None)
        ),
    ]
}

#[test]
fn another_accounts_rows_are_refused_like_missing_ones_and_nothing_is_written() {
    let mut cases = cases();
    if support::backend::postgres() {
        // The building block runs in a transaction the test opens on its own SQLite
        // connection; on PostgreSQL the store's `append_event` (above) covers the same check.
        support::backend::say(
            "SKIPPED on PostgreSQL: the case events::append_event (a raw SQLite transaction)",
        );
        cases.retain(|c| c.0 != "events::append_event");
    }
    run_cases(
        &cases,
        &["agent", "session", "trigger", "run", "model provider"],
    );
}

#[test]
fn a_worker_write_naming_another_accounts_run_is_refused_and_writes_nothing() {
    run_cases(&support::isolation::worker::worker_cases(), &[]);
}

/// A caller-chosen id is global: creating a trigger or a run under an id another account holds
/// is refused as taken (a conflict, since "not found" would be no answer to a create). It
/// reveals that the id is in use, nothing of the row, and writes nothing.
#[test]
fn a_caller_chosen_id_another_account_holds_is_taken_and_nothing_is_written() {
    let (_dir, store, a, b) = world();
    let start = snapshot(&store);
    let mut new = trigger(
        B,
        &b.agent,
        "probe",
        AgentTriggerSource::Webhook(WebhookSource::default()),
    );
    new.id = Some(a.schedule_trigger.clone());
    assert!(matches!(
        store.create_trigger(&new),
        Err(Error::Conflict {
            what: "trigger",
            ..
        })
    ));
    let mut run = workflow(B, &b.agent, "probe");
    run.id = Some(a.running_run.clone());
    assert!(matches!(
        store.enqueue_run(&run),
        Err(Error::Conflict { what: "run", .. })
    ));
    assert_eq!(snapshot(&store), start);
}
