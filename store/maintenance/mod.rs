//! Maintenance of the file's size: opt-in retention policies ([`retention`]) and the bounded
//! pruning that applies them ([`prune`]).
//!
//! Invariant: nothing is ever removed unless a policy row for its kind exists (the default keeps
//! everything), and pruning never removes a row something live still needs; what "old" and
//! "live" mean for each kind is documented in [`retention`] and enforced in `passes`.

pub(crate) mod passes;
pub mod prune;
pub mod retention;
