//! The handle as a server uses it: the async handle, the change feed, and the example server.
//!
//! One test binary per family (each binary links the whole store); the helpers they share are
//! the `seed-agents-test-support` crate (`support`).

#[cfg(feature = "tokio")]
mod async_store;
#[cfg(feature = "tokio")]
mod example_server;
mod feed;
mod parity;
