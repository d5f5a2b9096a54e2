//! Reading the audit log: pages of events, newest first, filtered by account, kind and time.
//!
//! Invariant: a page holds the events strictly before its cursor in `(at, chain, seq) DESC`
//! order, a total order (`(chain, seq)` is the key), so events appended meanwhile, which are
//! newer, never shift or repeat a page. Seqs count within a chain, so time orders the log.

use sea_query::{Expr, ExprTrait, Order, Query};

use crate::error::{Error, Result};
use crate::schema::audit_events::{Column, Kind, Row};
use crate::values::paging::{self, page_of, Cursor, Page};
use crate::Store;

/// Which events [`Store::audit_events`] returns; every field left `None` matches all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditFilter {
    /// Only the events concerning this account.
    pub account_id: Option<String>,
    /// Only the events of this kind.
    pub kind: Option<Kind>,
    /// Only the events at or after this time (epoch milliseconds).
    pub since: Option<i64>,
    /// Only the events before this time (epoch milliseconds).
    pub until: Option<i64>,
}

/// The cursor of a listed event: its `at`, and `<seq>:<chain>` as its id.
fn cursor_of(row: &Row) -> (i64, String) {
    (row.at, format!("{}:{}", row.seq, row.chain))
}

/// The chain and seq a cursor of this listing carries in its `id`.
fn cursor_key(cursor: &Cursor) -> Result<(&str, i64)> {
    let parsed = cursor
        .id
        .split_once(':')
        .and_then(|(seq, chain)| Some((chain, seq.parse().ok()?)));
    parsed.ok_or_else(|| Error::Invalid {
        field: "after",
        reason: "is not a cursor of the audit log".into(),
    })
}

impl Store {
    /// A page of audit events matching `filter`, newest first (by `at`, then chain and seq),
    /// starting after `after` (a cursor from the previous page: its `updated_at` is the event's
    /// `at`, its `id` the event's `<seq>:<chain>`).
    ///
    /// # Errors
    /// [`Error::Invalid`] (`page_size`, or `after` for a cursor of another listing);
    /// [`Error::Sqlite`] otherwise.
    ///
    /// # Examples
    /// ```
    /// use seed_agents_store::audit::AuditFilter;
    /// use seed_agents_store::schema::audit_events::Kind;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let store = seed_agents_store::Store::open(dir.path().join("agents.sqlite"))?;
    /// store.set_secret("acct-1", "api-key", b"s3cret", None)?;
    /// let filter = AuditFilter {
    ///     account_id: Some("acct-1".into()),
    ///     kind: Some(Kind::Secret),
    ///     ..AuditFilter::default()
    /// };
    /// let page = store.audit_events(&filter, Some(20), None)?;
    /// assert_eq!(page.items[0].action, "secret.set");
    /// assert_eq!(page.items[0].target, "secret api-key");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn audit_events(
        &self,
        filter: &AuditFilter,
        page_size: Option<u32>,
        after: Option<&Cursor>,
    ) -> Result<Page<Row>> {
        let size = paging::page_size(page_size)?;
        let mut select = Query::select();
        select
            .columns(Column::ALL.iter().copied())
            .from(Column::Table)
            .order_by(Column::At, Order::Desc)
            .order_by(Column::Chain, Order::Desc)
            .order_by(Column::Seq, Order::Desc)
            .limit(u64::from(size) + 1);
        if let Some(account) = &filter.account_id {
            select.and_where(Expr::col(Column::AccountId).eq(account.as_str()));
        }
        if let Some(kind) = filter.kind {
            select.and_where(Expr::col(Column::Kind).eq(kind.as_str()));
        }
        if let Some(since) = filter.since {
            select.and_where(Expr::col(Column::At).gte(since));
        }
        if let Some(until) = filter.until {
            select.and_where(Expr::col(Column::At).lt(until));
        }
        if let Some(cursor) = after {
            let (chain, seq) = cursor_key(cursor)?;
            let at = cursor.updated_at;
            select.and_where(
                Expr::col(Column::At)
                    .lt(at)
                    .or(Expr::col(Column::At).eq(at).and(
                        Expr::col(Column::Chain)
                            .lt(chain)
                            .or(Expr::col(Column::Chain)
                                .eq(chain)
                                .and(Expr::col(Column::Seq).lt(seq))),
                    )),
            );
        }
        let items: Vec<Row> = self.select(&select)?;
        Ok(page_of(items, size, cursor_of))
    }
}
