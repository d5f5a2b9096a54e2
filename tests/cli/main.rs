//! The `seed-agents-db` binary (`cli` feature): its commands, reports and exit codes.
//!
//! One test binary per family (each binary links the whole store); the helpers they share are
//! the `seed-agents-test-support` crate (`support`).

mod commands;
mod maintenance;
