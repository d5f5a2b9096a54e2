//! Opening a file: the version and structure gate, upgrades from every version, trouble in the
//! environment, and opening without writing.
//!
//! One test binary per family (each binary links the whole store); the helpers they share are
//! the `seed-agents-test-support` crate (`support`).

mod environment;
mod faults;
mod open_no_write;
mod races;
mod structure;
mod upgrade;
