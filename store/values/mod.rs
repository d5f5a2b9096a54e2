//! The values every part of the store passes around: DAG-CBOR payload bytes, the clock, ids,
//! paging cursors, schema versions, and the one vocabulary of argument checks.
//!
//! Invariant: each value is valid by construction (a `Cbor` holds canonical bytes, a `Cursor`
//! only what a page handed out), so the operations that take one need not check it again.

pub mod cbor;
pub(crate) mod check;
pub mod clock;
pub mod ids;
pub mod paging;
pub(crate) mod version;
