//! The conversation operations as futures: accounts, agents, sessions, events, providers,
//! secrets, idempotency and deletion (the sync ones live in `crate::conversation`).
//!
//! [`Store::idempotent`] takes the action as a closure over the transaction: run it through
//! [`AsyncStore::call`]. Its two-step form (replay, then record) is here, written out because it
//! is generic; so is [`AsyncStore::set_secret`], whose copy of the plaintext is zeroized.

use std::borrow::Borrow;

use serde::de::DeserializeOwned;
use serde::Serialize;
use zeroize::Zeroizing;

use super::async_operations;
use crate::accounts::Capability;
use crate::agents::{Access, NewAgent};
use crate::deletion::AgentDeletion;
use crate::error::Result;
use crate::events::Appended;
use crate::idempotency::{Action, Outcome};
use crate::payload::{
    AgentDefinition, ModelOverride, ModelProviderConfig, RunPlan, SecretMetadata,
    SessionEventPayload,
};
use crate::schema::{
    account_authorizations, agent_collaborators, agents, model_providers, session_events, sessions,
};
use crate::secrets::{SecretInfo, SecretPlaintext};
use crate::sessions::{NewSession, PlanWrite, PlanWriter, SessionQuery};
use crate::values::paging::{Cursor, Page};
use crate::{AsyncStore, Store};

async_operations! {
    // Accounts.
    fn touch_account(account_id: &str) -> ();
    fn authorize_signer(
        account_id: &str,
        signer_id: &str,
        role: account_authorizations::Role,
        capability: Option<&Capability>,
    ) -> account_authorizations::Row;
    fn revoke_signer(account_id: &str, signer_id: &str) -> bool;
    fn signers(account_id: &str) -> Vec<account_authorizations::Row>;
    fn is_authorized_signer(account_id: &str, signer_id: &str) -> bool;

    // Agents and their collaborators.
    fn create_agent(account_id: &str, new: &NewAgent) -> agents::Row;
    fn agent(account_id: &str, id: &str) -> Option<agents::Row>;
    fn agents(account_id: &str, page_size: Option<u32>, after: Option<&Cursor>)
        -> Page<agents::Row>;
    fn update_agent_definition(account_id: &str, id: &str, definition: &AgentDefinition)
        -> agents::Row;
    fn set_agent_visibility(
        account_id: &str,
        id: &str,
        public_read: Option<bool>,
        public_chat: Option<bool>,
    ) -> agents::Row;
    fn set_agent_status(account_id: &str, id: &str, status: agents::Status) -> agents::Row;
    fn invite_collaborator(
        owner_account: &str,
        agent_id: &str,
        invitee: &str,
        role: agent_collaborators::Role,
    ) -> agent_collaborators::Row;
    fn accept_invitation(invitee: &str, agent_id: &str) -> agent_collaborators::Row;
    fn set_collaborator_role(
        owner_account: &str,
        agent_id: &str,
        collaborator: &str,
        role: agent_collaborators::Role,
    ) -> agent_collaborators::Row;
    fn remove_collaborator(owner_account: &str, agent_id: &str, collaborator: &str) -> bool;
    fn collaborators(owner_account: &str, agent_id: &str) -> Vec<agent_collaborators::Row>;
    fn collaborations(account_id: &str) -> Vec<agent_collaborators::Row>;
    fn access(agent_id: &str, account_id: &str) -> Access;

    // Deletion.
    fn delete_session(account_id: &str, session_id: &str) -> ();
    fn delete_agent(account_id: &str, agent_id: &str) -> AgentDeletion;

    // The event log.
    fn append_event(account_id: &str, session_id: &str, event: &SessionEventPayload)
        -> Appended;
    fn append_events(account_id: &str, session_id: &str, events: &[SessionEventPayload])
        -> Vec<Appended>;
    fn events_after(account_id: &str, session_id: &str, after_seq: i64, limit: Option<u32>)
        -> Vec<session_events::Row>;

    // Model providers.
    fn create_provider(account_id: &str, name: &str, config: &ModelProviderConfig)
        -> model_providers::Row;
    fn update_provider(
        account_id: &str,
        id: &str,
        name: Option<&str>,
        config: &ModelProviderConfig,
    ) -> model_providers::Row;
    fn provider(account_id: &str, id: &str) -> Option<model_providers::Row>;
    fn provider_by_name(account_id: &str, name: &str) -> Option<model_providers::Row>;
    fn providers(account_id: &str) -> Vec<model_providers::Row>;
    fn delete_provider(account_id: &str, id: &str) -> bool;

    // Secrets.
    fn secret(account_id: &str, name: &str) -> Option<SecretInfo>;
    fn secrets(account_id: &str) -> Vec<SecretInfo>;
    fn delete_secret(account_id: &str, name: &str) -> bool;
    fn decrypt_secret(account_id: &str, name: &str) -> SecretPlaintext;

    // Sessions.
    fn create_session(account_id: &str, new: &NewSession) -> sessions::Row;
    fn session(account_id: &str, id: &str) -> Option<sessions::Row>;
    fn sessions(account_id: &str, agent_id: &str, query: &SessionQuery) -> Page<sessions::Row>;
    fn child_sessions(account_id: &str, session_id: &str) -> Vec<sessions::Row>;
    fn set_session_title(
        account_id: &str,
        id: &str,
        title: &str,
        source: sessions::TitleSource,
    ) -> bool;
    fn set_session_plan(account_id: &str, id: &str, plan: Option<RunPlan>, writer: PlanWriter)
        -> PlanWrite;
    fn set_session_model_override(
        account_id: &str,
        id: &str,
        model_override: Option<&ModelOverride>,
    ) -> sessions::Row;
    fn set_session_description(account_id: &str, id: &str, description: Option<&str>)
        -> sessions::Row;
    fn set_session_thoroughness(
        account_id: &str,
        id: &str,
        thoroughness: Option<sessions::Thoroughness>,
    ) -> sessions::Row;
}

impl AsyncStore {
    /// [`Store::set_secret`] as a future, on the blocking pool. The plaintext's copy is zeroized
    /// when the operation ends.
    ///
    /// # Errors
    /// As [`Store::set_secret`].
    pub async fn set_secret(
        &self,
        account_id: &str,
        name: &str,
        value: &[u8],
        metadata: Option<&SecretMetadata>,
    ) -> Result<SecretInfo> {
        let (account_id, name) = (account_id.to_owned(), name.to_owned());
        let value = Zeroizing::new(value.to_vec());
        let metadata = metadata.cloned();
        self.call(move |store| store.set_secret(&account_id, &name, &value, metadata.as_ref()))
            .await
    }

    /// [`Store::idempotent_replay`] as a future, on the blocking pool (the request is copied).
    ///
    /// # Errors
    /// As [`Store::idempotent_replay`].
    pub async fn idempotent_replay<Req, R>(
        &self,
        account_id: &str,
        action: Action,
        client_id_raw: &str,
        request: &Req,
    ) -> Result<Option<R>>
    where
        Req: Serialize + ToOwned + ?Sized + 'static,
        Req::Owned: Send + 'static,
        R: DeserializeOwned + Send + 'static,
    {
        let (account_id, client_id_raw) = (account_id.to_owned(), client_id_raw.to_owned());
        let request = request.to_owned();
        self.call(move |store: &Store| {
            store.idempotent_replay::<Req, R>(&account_id, action, &client_id_raw, request.borrow())
        })
        .await
    }

    /// [`Store::record_idempotent`] as a future, on the blocking pool (the request is copied).
    ///
    /// # Errors
    /// As [`Store::record_idempotent`].
    pub async fn record_idempotent<Req, R>(
        &self,
        account_id: &str,
        action: Action,
        client_id_raw: &str,
        request: &Req,
        response: R,
    ) -> Result<Outcome<R>>
    where
        Req: Serialize + ToOwned + ?Sized + 'static,
        Req::Owned: Send + 'static,
        R: Serialize + DeserializeOwned + Send + 'static,
    {
        let (account_id, client_id_raw) = (account_id.to_owned(), client_id_raw.to_owned());
        let request = request.to_owned();
        self.call(move |store: &Store| {
            store.record_idempotent::<Req, R>(
                &account_id,
                action,
                &client_id_raw,
                request.borrow(),
                response,
            )
        })
        .await
    }
}
