//! Generated from schema.sql and migrations/ at build time: one module per table with its row
//! struct, enums, sea-query identifiers and query helpers, plus the version, the migrations and
//! the structural fingerprint of every version.

// This folder is the home of the generated code: the build writes it into `OUT_DIR` (by
// `seed-agents-codegen`) and this shell includes it once, beside the tests of what it
// generated. Nothing else here is written by hand.
// `dead_code`: the crate-private write helpers of tables no operation writes that way.
#![allow(
    dead_code,
    missing_docs,
    clippy::all,
    clippy::too_many_arguments,
    clippy::needless_lifetimes
)]

include!(concat!(env!("OUT_DIR"), "/schema.rs"));

#[cfg(test)]
mod tests;
