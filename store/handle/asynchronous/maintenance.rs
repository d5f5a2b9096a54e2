//! The maintenance operations as futures: retention policies and pruning (the sync ones live in
//! `crate::maintenance`). A prune runs on the blocking pool like any operation; its batches are
//! separate writes, so other operations interleave with it there too.

use super::async_operations;
use crate::prune::{PruneOptions, PruneReport};
use crate::retention::{Kind, RetentionPolicy};
use crate::schema::retention_policies;

async_operations! {
    fn set_retention_policy(kind: Kind, policy: &RetentionPolicy) -> retention_policies::Row;
    fn retention_policies() -> Vec<retention_policies::Row>;
    fn clear_retention_policy(kind: Kind) -> bool;
    fn prune(options: &PruneOptions) -> PruneReport;
}
