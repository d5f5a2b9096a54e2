//! The execution family: what runs, when, and what it remembers. The run queue and its claims,
//! script journals, waits, triggers with their exactly-once firings, and the activity
//! watermarks the trigger monitor polls from.
//!
//! Every write a worker makes on a run carries its [`lease::Claim`], so a worker whose lease was
//! taken over cannot change the run.

pub mod journal;
pub mod lease;
pub mod runs;
pub mod triggers;
pub mod waits;
pub mod watermarks;
