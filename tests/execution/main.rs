//! Execution state: the run queue, leases and fencing, waits and signals, workflow journals,
//! triggers, query plans, and races between threads, processes and nodes.
//!
//! One test binary per family (each binary links the whole store); the helpers they share are
//! the `seed-agents-test-support` crate (`support`).

mod fencing;
mod journal;
mod node_races;
mod plans;
mod races;
mod runs;
mod triggers;
mod ts_waits;
mod waits;
