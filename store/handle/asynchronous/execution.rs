//! The execution operations as futures: the run queue, journals, waits and signals, triggers
//! and their firings and webhooks, activity watermarks (the sync ones live in
//! `crate::execution`).
//!
//! [`AsyncStore::verify_webhook_secret`] is written out rather than generated: the presented
//! secret is copied into a buffer that is zeroized when the operation ends.

use zeroize::Zeroizing;

use super::async_operations;
use crate::error::Result;
use crate::journal::JournalRecord;
use crate::lease::Claim;
use crate::payload::{
    ActivityCursor, Ipld, RunUsage, RunWait, RunWaitEvent, TriggerActivity, WaitMatch,
    WorkflowJournalEntry,
};
use crate::runs::{
    CancelReport, ChildResolution, ClaimLimits, ContinueAsNew, Finalized, NewRun, RunOutcome,
    SweepMode,
};
use crate::schema::{
    activity_watermarks, agent_triggers, run_event_waits, runs, trigger_event_claims,
    trigger_firings,
};
use crate::triggers::{
    Admission, CombineTriggers, FiringRequest, FiringUpdate, NewTrigger, TriggerPatch,
    TriggerWrite, WebhookSecret,
};
use crate::waits::{ActivityEvent, Delivered, DeliverySource, SignalOutcome};
use crate::AsyncStore;

async_operations! {
    // The run queue: enqueue, claim, park, finish, read.
    fn enqueue_run(new: &NewRun) -> runs::Row;
    fn continue_as_new(claim: &Claim, next: &ContinueAsNew) -> runs::Row;
    fn claim_next_run(owner: &str, limits: ClaimLimits) -> Option<runs::Row>;
    fn claim_run(account_id: &str, id: &str, owner: &str) -> Option<runs::Row>;
    fn start_run(claim: &Claim) -> runs::Row;
    fn renew_lease(claim: &Claim) -> i64;
    fn boot_sweep(mode: SweepMode) -> Vec<String>;
    fn park_run(claim: &Claim, wait: &RunWait) -> runs::Row;
    fn wake_due_timers() -> Vec<String>;
    fn requeue_run(account_id: &str, id: &str) -> runs::Row;
    fn resolve_child(account_id: &str, parent_id: &str, tool_call_id: &str) -> ChildResolution;
    fn resume_budget_pause(account_id: &str, id: &str) -> runs::Row;
    fn record_run_usage(claim: &Claim, usage: &RunUsage) -> runs::Row;
    fn finalize_run(claim: &Claim, outcome: RunOutcome) -> Finalized;
    fn cancel_run_tree(account_id: &str, id: &str) -> CancelReport;
    fn run(account_id: &str, id: &str) -> Option<runs::Row>;
    fn run_tree(account_id: &str, root_run_id: &str) -> Vec<runs::Row>;
    fn session_runs(account_id: &str, session_id: &str) -> Vec<runs::Row>;
    fn find_child_by_tool_call(account_id: &str, parent_run_id: &str, tool_call_id: &str)
        -> Option<runs::Row>;

    // Script journals.
    fn append_journal(claim: &Claim, entry: &WorkflowJournalEntry) -> i64;
    fn load_journal(account_id: &str, run_id: &str, after_seq: i64) -> Vec<JournalRecord>;

    // Waits and signals.
    fn register_wait(
        claim: &Claim,
        wait_id: &str,
        criteria: &WaitMatch,
        timeout_at: Option<i64>,
    ) -> run_event_waits::Row;
    fn park_for_event(claim: &Claim, wait: &RunWaitEvent, criteria: &WaitMatch) -> runs::Row;
    fn run_waits(account_id: &str, run_id: &str) -> Vec<run_event_waits::Row>;
    fn deliver_signal(
        account_id: &str,
        run_id: Option<&str>,
        source: DeliverySource,
        signal: &str,
        payload: Option<Ipld>,
    ) -> SignalOutcome;
    fn deliver_activity(account_id: &str, event: &ActivityEvent) -> Vec<Delivered>;
    fn sweep_wait_timeouts() -> Vec<Delivered>;

    // Triggers, firings and webhooks.
    fn create_trigger(new: &NewTrigger) -> TriggerWrite;
    fn update_trigger(account_id: &str, id: &str, patch: &TriggerPatch) -> TriggerWrite;
    fn set_trigger_enabled(account_id: &str, id: &str, enabled: bool) -> agent_triggers::Row;
    fn trigger(account_id: &str, id: &str) -> Option<agent_triggers::Row>;
    fn triggers(account_id: &str, agent_id: &str) -> Vec<agent_triggers::Row>;
    fn delete_trigger(account_id: &str, id: &str) -> bool;
    fn combine_triggers(account_id: &str, request: &CombineTriggers) -> agent_triggers::Row;
    fn admit_firing(request: &FiringRequest) -> Admission;
    fn update_firing(account_id: &str, firing_id: &str, update: &FiringUpdate)
        -> trigger_firings::Row;
    fn firings(account_id: &str, trigger_id: &str) -> Vec<trigger_firings::Row>;
    fn trigger_claims(account_id: &str, trigger_id: &str) -> Vec<trigger_event_claims::Row>;
    fn webhook_secret(account_id: &str, trigger_id: &str) -> WebhookSecret;
    fn admit_webhook(
        account_id: &str,
        trigger_id: &str,
        idempotency_key: Option<&str>,
        body: &[u8],
        activity: TriggerActivity,
    ) -> Admission;
    fn rotate_webhook_secret(account_id: &str, trigger_id: &str) -> WebhookSecret;

    // Activity watermarks.
    fn watermark(account_id: &str, server_url: &str) -> Option<activity_watermarks::Row>;
    fn watermarks(account_id: &str) -> Vec<activity_watermarks::Row>;
    fn set_watermark_cursor(account_id: &str, server_url: &str, cursor: &ActivityCursor)
        -> activity_watermarks::Row;
    fn record_watermark_poll(account_id: &str, server_url: &str) -> activity_watermarks::Row;
    fn record_watermark_success(account_id: &str, server_url: &str, cursor: &ActivityCursor)
        -> activity_watermarks::Row;
    fn record_watermark_error(account_id: &str, server_url: &str, error: &str)
        -> activity_watermarks::Row;
}

impl AsyncStore {
    /// [`Store::verify_webhook_secret`](crate::Store::verify_webhook_secret) as a future, on the
    /// blocking pool. The presented secret's copy is zeroized when the operation ends.
    ///
    /// # Errors
    /// As [`Store::verify_webhook_secret`](crate::Store::verify_webhook_secret).
    pub async fn verify_webhook_secret(
        &self,
        account_id: &str,
        trigger_id: &str,
        presented: &str,
    ) -> Result<bool> {
        let (account_id, trigger_id) = (account_id.to_owned(), trigger_id.to_owned());
        let presented = Zeroizing::new(presented.to_owned());
        self.call(move |store| store.verify_webhook_secret(&account_id, &trigger_id, &presented))
            .await
    }
}
