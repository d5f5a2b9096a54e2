//! The execution family: what runs, when, and what it remembers. The run queue and its claims,
//! script journals, waits, triggers with their exactly-once firings, and the activity
//! watermarks the trigger monitor polls from.
//!
//! Every write a worker makes on a run carries its [`lease::Claim`], so a worker whose lease was
//! taken over cannot change the run.
//!
//! Imports run one way: `runs` (its `lifecycle` and `queries`) imports none of `journal`,
//! `waits` or `triggers`, which build on it; `plans`, the query-plan registry, imports them all
//! and nothing imports it but the tests and benchmarks.

pub mod journal;
pub mod lease;
#[doc(hidden)]
pub mod plans;
pub mod runs;
pub mod triggers;
pub mod waits;
pub mod watermarks;
