//! Tools: tool documents, MCP servers, drafts and session continuations.
//!
//! One test binary per family (each binary links the whole store); the helpers they share are
//! the `seed-agents-test-support` crate (`support`).

mod continuations;
mod documents;
mod drafts;
mod mcp;
