//! The SQL runtime both backends share: the `Db`/`Executor`/`Columns` seam that generated
//! helpers and checked statements run through, what a checked statement carries, its
//! arguments, and the dynamic rows of `Store::select`.
//!
//! Invariant: statements arrive here already checked at compile time (by the macros or the
//! build); nothing here parses SQL.

pub(crate) mod arguments;
pub(crate) mod db;
pub(crate) mod dynamic;
pub(crate) mod query;
