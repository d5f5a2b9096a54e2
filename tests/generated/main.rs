//! What the build generates: the checked-SQL macros (at run time and compile-fail), the schema
//! pages, and the `serde` feature.
//!
//! One test binary per family (each binary links the whole store); the helpers they share are
//! the `seed-agents-test-support` crate (`support`).

mod docs;
mod macros;
mod serde;
