//! Reliability: contention between processes, `kill -9` at random moments, corrupt bytes, and one
//! handle shared by every thread.
//!
//! One test binary per family (each binary links the whole store); the helpers they share are
//! the `seed-agents-test-support` crate (`support`).

mod contention;
mod decoders;
mod flip;
mod kill;
mod rotation;
mod shared_handle;
