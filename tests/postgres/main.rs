//! The PostgreSQL backend on a real server: schema, connections, locks, `copy` from SQLite, and
//! one meaning on both backends.
//!
//! One test binary per family (each binary links the whole store); the helpers they share are
//! the `seed-agents-test-support` crate (`support`).

#[cfg(feature = "cli")]
mod copy;
#[cfg(feature = "postgres")]
mod decode;
mod differential;
mod locks;
mod pool;
#[cfg(feature = "postgres")]
mod schema;
