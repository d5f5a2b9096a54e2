//! The conversation family: who talks to whom and what was said. Accounts and their signers,
//! agents with their visibility and collaborators, sessions and their event log, encrypted
//! secrets, provider configurations, request idempotency and the deletion of an agent's rows.
//!
//! Every operation here takes the account it acts for and answers another account's rows as
//! missing.

pub mod accounts;
pub mod agents;
pub mod deletion;
pub mod events;
pub mod idempotency;
pub mod providers;
pub mod secrets;
pub mod sessions;
