//! The tools family: content-addressed tool documents (CIDv1 over their DAG-CBOR bytes), the
//! agent tool projections built from them, MCP servers, drafts and continuation edges.
//!
//! The tool documents' own operations and types sit at this module's root; a tool's CID always
//! matches its bytes.

pub mod continuations;
mod documents;
pub mod drafts;
pub mod mcp;

pub use documents::*;
