//! The SQLite engine under the store: opening a file and gating its version and structure,
//! the file on disk, migrations, planner statistics, the full integrity check, riding out
//! contention, the read pool, the group-committing writer and WAL checkpoints.
//!
//! Invariant: this is the only place that configures a SQLite connection or touches the file
//! beside it; the domain operations reach SQLite only through the handle's frames.

pub mod busy;
pub(crate) mod checkpoint;
pub(crate) mod commit;
pub mod gate;
pub mod integrity;
pub mod migrate;
pub(crate) mod open;
pub(crate) mod pool;
pub(crate) mod statistics;
pub(crate) mod status;
pub(crate) mod storage;
