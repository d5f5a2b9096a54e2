//! seed-agents-store: the state store of a Seed Agents server.

pub mod cbor;
pub mod payload;
