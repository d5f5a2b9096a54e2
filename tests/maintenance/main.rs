//! Maintenance: the audit log (events, hash chain, races between processes) and retention.
//!
//! One test binary per family (each binary links the whole store); the helpers they share are
//! the `seed-agents-test-support` crate (`support`).

mod audit_chain;
mod audit_events;
mod audit_races;
mod prune;
