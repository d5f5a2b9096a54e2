//! Tool documents (`tool_documents`): their canonical bytes and CID (`encoding`), the checks
//! an authored document passes before it is stored (`validate`), the reconciliation builtins
//! and MCP projections share (`reconcile`), and the operations on [`Store`](crate::Store)
//! (`store`): builtins materialized from the caller's registry, and lambdas.
//!
//! This module owns the one byte form of a tool document and so its version. Invariants:
//! - `doc_cbor` is [`encode_document`] of the document and `cid` is [`cid_of`] those exact bytes:
//!   every writer in this crate goes through [`Encoded`], so a row's CID always matches its bytes,
//!   equal documents have equal CIDs and any edit changes it;
//! - nothing reaches the table unchecked: lambdas and builtins pass [`validate_document`], MCP
//!   projections ([`crate::mcp`]) were checked when their discovery was recorded;
//! - names are held first come, except builtins: a lambda may not take a builtin's or a verb's
//!   name, an MCP projection never replaces a lambda (or a builtin), and a lambda never replaces
//!   an MCP projection; builtins are never deleted by a caller, only disabled;
//! - a reconciliation ([`Store::ensure_builtin_tools`](crate::Store::ensure_builtin_tools), the
//!   MCP projection sync) first plans against what is stored and writes nothing when nothing
//!   differs; otherwise it re-plans and applies inside one `BEGIN IMMEDIATE` transaction, so a
//!   concurrent writer cannot slip between the comparison and the write.

mod encoding;
mod reconcile;
mod store;
mod validate;

pub use crate::schema::tool_documents::{Kind, Row};
pub use encoding::{cid_of, encode_document, Encoded};
pub use reconcile::ToolSync;
pub(crate) use reconcile::{apply, held, plan, Change, Held};
pub(crate) use validate::check_description;
pub use validate::{
    check_name, check_schema_shape, validate_document, MAX_DESCRIPTION_BYTES, MAX_NAME_LEN,
    MAX_SCHEMA_DEPTH, MAX_SOURCE_BYTES, MIN_NAME_LEN, VERBS,
};
