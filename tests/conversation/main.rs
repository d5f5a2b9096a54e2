//! Conversation state: accounts and secrets, agents and sessions, the Log, deletion, request
//! idempotency, secret keys, and the account isolation of every operation.
//!
//! One test binary per family (each binary links the whole store); the helpers they share are
//! the `seed-agents-test-support` crate (`support`).

mod accounts;
mod agents;
mod deletion;
mod events;
mod idempotency;
mod isolation;
mod keys;
