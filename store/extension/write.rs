//! The extensions' write path: [`Store::write_extension`], the store's own transaction frame
//! with the rights of the registered extensions only.
//!
//! Invariant: inside it no statement changes what the extensions do not own. On SQLite the
//! writer connection's authorizer ([`Guard`]) refuses, as each statement is prepared, a write
//! to any other table, any change to the schema, and any transaction control (the frame owns
//! the transaction); every statement prepared before is dropped from the cache on entry, so
//! none prepared under the store's rights runs under the extension's. On PostgreSQL, which has
//! no authorizer, the transaction's own row counts per table (`pg_stat_xact_user_tables`, and
//! `pg_stat_xact_sys_tables` for the catalogs, which DDL and `TRUNCATE` write) are compared
//! before and after. Either way a refused write fails the whole operation, and the
//! frame rolls back everything it wrote.

use crate::error::{Error, Result};
use crate::sql::db::Db;
use crate::Store;
use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::Connection;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

impl Store {
    /// Runs `op` in the store's writer (group commit, busy handling, one transaction frame)
    /// with the rights of the registered extensions
    /// ([`OpenOptions::extension`](crate::OpenOptions::extension)): it may read every table and
    /// write only the extensions' own. It commits what `op` wrote when `op` returns `Ok`, and
    /// rolls it all back otherwise; on PostgreSQL `op` may run more than once (a write
    /// PostgreSQL cannot serialize runs again), so it writes only through its `&Db`. Use the
    /// extension's generated write helpers and its checked `query!` on the `&Db`.
    ///
    /// ```ignore
    /// store.write_extension(|db| {
    ///     db::query!("INSERT INTO user_preferences (account_id, theme) VALUES (?1, ?2)", id, "dark")
    ///         .execute(db)?;
    ///     Ok(())
    /// })?;
    /// ```
    ///
    /// # Errors
    /// [`Error::StoreTableWrite`] when a statement writes a table no registered extension owns
    /// (a store table), changes the schema or controls the transaction: nothing of `op` is
    /// committed. Otherwise what `op` returns, and the frame's own errors.
    pub fn write_extension<T>(&self, mut op: impl FnMut(&Db) -> Result<T>) -> Result<T> {
        let owned = self.extensions().owned();
        #[cfg(feature = "postgres")]
        if self.postgres().is_some() {
            return self.write(|db, _| counted(db, &owned, &mut op));
        }
        let guard = self.write_guard()?.clone();
        self.write(|db, _| {
            let conn = db
                .as_sqlite()
                .expect("the SQLite frame hands out a SQLite connection");
            let active = guard.enter(conn, owned.clone());
            let value = op(db);
            match active.leave() {
                Some(what) => Err(Error::StoreTableWrite { what }),
                None => value,
            }
        })
    }
}

/// The writer connection's authorizer: inactive (allowing everything) outside
/// [`Store::write_extension`], and while active, allowing only what the extensions own.
#[derive(Debug, Default)]
pub(crate) struct Guard {
    state: Mutex<GuardState>,
}

#[derive(Debug, Default)]
struct GuardState {
    /// What the extension in progress may write (lower-case names); `None` outside one.
    owned: Option<Arc<BTreeSet<String>>>,
    /// The first thing refused while active.
    refused: Option<String>,
}

impl Guard {
    /// Installs the authorizer for `guard` on `conn`, the store's writer.
    ///
    /// # Errors
    /// SQLite's, when the authorizer cannot be set.
    pub(crate) fn install(guard: &Arc<Guard>, conn: &mut Connection) -> Result<()> {
        let guard = guard.clone();
        conn.authorizer(Some(move |ctx: AuthContext<'_>| {
            let mut state = guard.lock();
            let Some(owned) = &state.owned else {
                return Authorization::Allow;
            };
            match refusal(&ctx.action, owned) {
                None => Authorization::Allow,
                Some(what) => {
                    state.refused.get_or_insert(what);
                    Authorization::Deny
                }
            }
        }))?;
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, GuardState> {
        // The state is two plain fields, whole after any panic.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts an extension's write on `conn`: statements the store prepared under its own
    /// rights leave the cache, so each statement of the write is prepared, and judged, anew.
    /// The write ends when the returned value is dropped, also when the operation panics.
    fn enter(&self, conn: &Connection, owned: Arc<BTreeSet<String>>) -> Active<'_> {
        conn.flush_prepared_statement_cache();
        *self.lock() = GuardState {
            owned: Some(owned),
            refused: None,
        };
        Active(self)
    }
}

/// An extension's write in progress: the store's own rights come back when it is dropped.
struct Active<'a>(&'a Guard);

impl Active<'_> {
    /// Ends the write: what was refused, if anything.
    fn leave(self) -> Option<String> {
        self.0.lock().refused.take()
    }
}

impl Drop for Active<'_> {
    fn drop(&mut self) {
        *self.0.lock() = GuardState::default();
    }
}

/// Why an extension's write may not do `action`, if it may not.
fn refusal(action: &AuthAction<'_>, owned: &BTreeSet<String>) -> Option<String> {
    let table = |verb: &str, name: &str| {
        let lower = name.to_ascii_lowercase();
        // AUTOINCREMENT keeps an extension table's counter in `sqlite_sequence`.
        (!owned.contains(&lower) && lower != "sqlite_sequence")
            .then(|| format!("{verb} `{name}`, which no registered extension owns"))
    };
    match *action {
        AuthAction::Read { .. }
        | AuthAction::Select
        | AuthAction::Function { .. }
        | AuthAction::Recursive => None,
        AuthAction::Insert { table_name } => table("writes to", table_name),
        AuthAction::Update { table_name, .. } => table("writes to", table_name),
        AuthAction::Delete { table_name } => table("deletes from", table_name),
        AuthAction::Transaction { .. } | AuthAction::Savepoint { .. } => {
            Some("controls the transaction, which the store's write frame owns".into())
        }
        AuthAction::Pragma { pragma_name, .. } => Some(format!("runs PRAGMA {pragma_name}")),
        ref other => Some(format!(
            "changes the schema or the connection ({other:?}), which only migrations do"
        )),
    }
}

/// `op` on PostgreSQL, refused when the transaction's row counts show a write to a table the
/// extensions do not own, or any change to the catalogs (DDL, `TRUNCATE`).
#[cfg(feature = "postgres")]
fn counted<T>(
    db: &Db,
    owned: &BTreeSet<String>,
    op: &mut impl FnMut(&Db) -> Result<T>,
) -> Result<T> {
    let before = writes(db, owned)?;
    let value = op(db)?;
    let after = writes(db, owned)?;
    match after
        .iter()
        .find(|(table, n)| before.get(*table) != Some(*n))
    {
        Some((table, _)) if table == CATALOGS => Err(Error::StoreTableWrite {
            what: "changes the schema (PostgreSQL's catalogs), which only migrations do".into(),
        }),
        Some((table, _)) => Err(Error::StoreTableWrite {
            what: format!("writes to `{table}`, which no registered extension owns"),
        }),
        None => Ok(value),
    }
}

/// The key under which [`writes`] counts the rows written to PostgreSQL's own catalogs: a name
/// no table can have.
#[cfg(feature = "postgres")]
const CATALOGS: &str = " catalogs";

/// The rows this transaction inserted, updated or deleted so far in each table of the schema
/// that the extensions do not own, and in the system catalogs together ([`CATALOGS`]), which
/// any DDL or `TRUNCATE` writes.
#[cfg(feature = "postgres")]
fn writes(db: &Db, owned: &BTreeSet<String>) -> Result<std::collections::BTreeMap<String, i64>> {
    let mut out = std::collections::BTreeMap::new();
    db.each_row_once(
        "SELECT relname::text, (n_tup_ins + n_tup_upd + n_tup_del)::bigint \
         FROM pg_stat_xact_user_tables WHERE schemaname = current_schema() \
         UNION ALL SELECT ' catalogs', coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::bigint \
         FROM pg_stat_xact_sys_tables",
        &[],
        &mut |row| {
            let table = match row.value(0)? {
                rusqlite::types::ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                _ => return Ok(true),
            };
            let n = match row.value(1)? {
                rusqlite::types::ValueRef::Integer(n) => n,
                _ => 0,
            };
            if !owned.contains(&table.to_ascii_lowercase()) {
                out.insert(table, n);
            }
            Ok(true)
        },
    )?;
    Ok(out)
}
