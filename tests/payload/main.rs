//! Payloads: the types against canonical DAG-CBOR, the TypeScript server's own bytes, and the
//! Log's event decoder.
//!
//! One test binary per family (each binary links the whole store); the helpers they share are
//! the `seed-agents-test-support` crate (`support`).

mod decoder;
mod types;
mod vectors;
