//! The audit log's operations as futures (the sync ones live in `crate::audit`).

use super::async_operations;
use crate::audit::{AuditFilter, AuditPruned, AuditReport};
use crate::schema::audit_events;
use crate::values::paging::{Cursor, Page};

async_operations! {
    fn audit_events(filter: &AuditFilter, page_size: Option<u32>, after: Option<&Cursor>)
        -> Page<audit_events::Row>;
    fn verify_audit_log() -> AuditReport;
    fn prune_audit_log(older_than: std::time::Duration, batch_rows: u32) -> AuditPruned;
}
