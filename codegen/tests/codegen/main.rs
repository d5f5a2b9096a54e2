//! The code generator's tests, one binary: the drift check, the emitters, the PostgreSQL plan,
//! what the checker reads of a statement, the decoders of its own inputs, and its CLI.

#[cfg(feature = "cli")]
mod cli;
mod common;
mod decoders;
mod doc_coverage;
mod drift;
mod emit_docs;
mod emit_rust;
mod extension;
mod postgres_plan;
mod query_bindings;
mod query_fuzz;
