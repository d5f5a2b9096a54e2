//! Extension schemas: a server crate's own tables, declared as a name, a `schema.sql` and a
//! `migrations/` chain of their own, and replayed in SQLite on top of the store's newest schema.
//!
//! Invariant: a [`Project`] of an extension exists only when its baseline equals its genesis
//! plus every migration (the store's drift check, on the extension's own objects), its lock
//! holds, and neither its `schema.sql` nor any migration creates, alters, drops, indexes,
//! triggers on or writes to an object of the store: SQLite's authorizer refuses each such action
//! as the statement is prepared, so no reading of the SQL text can be fooled.

use crate::error::{read, Error, Result};
use crate::migration::read_migrations;
use crate::model::Schema;
use crate::project::{self, execute_file, Baseline, Project};
use crate::{annotations, diff};
use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::Connection;
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The longest extension name: its version key must stay readable.
const NAME_MAX: usize = 40;

/// Checks that `name` can name an extension: `[a-z][a-z0-9_]*`, at most 40 bytes.
///
/// # Errors
/// [`Error::Extension`] saying what the name may hold.
pub fn check_name(name: &str) -> Result<()> {
    let mut bytes = name.bytes();
    let ok = matches!(bytes.next(), Some(b'a'..=b'z'))
        && bytes.all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_'))
        && name.len() <= NAME_MAX;
    if ok {
        return Ok(());
    }
    Err(Error::Extension {
        name: name.to_string(),
        message: format!(
            "an extension's name is a lower-case letter followed by lower-case letters, digits \
             and underscores, at most {NAME_MAX} bytes"
        ),
    })
}

/// Reads, replays and checks the extension `name` in `root` (holding its `schema.sql` and
/// `migrations/`) on top of the store's schema in `store_root`.
///
/// The returned project's models hold the extension's objects only; its `catalogs` are empty
/// (the runtime verifies an extension by its fingerprint).
///
/// # Errors
/// Every check of [`Project::load`], applied to the extension; [`Error::Extension`] for a bad
/// name or a statement that touches a store object.
pub fn load(name: &str, root: impl AsRef<Path>, store_root: impl AsRef<Path>) -> Result<Project> {
    check_name(name)?;
    let root = root.as_ref().to_path_buf();
    let store = Baseline::from_sql(
        store_root.as_ref().join("schema.sql"),
        read(&store_root.as_ref().join("schema.sql"))?,
    )?;
    let schema_path = root.join("schema.sql");
    let schema_sql = read(&schema_path)?;
    let migrations = read_migrations(&root.join("migrations"))?;
    let warnings = project::check_lock(&root, &migrations)?;

    let (_, mut fresh) = replay(name, &store, [(&*schema_path, schema_sql.as_str())])?;
    let fresh = fresh.pop().expect("one model per file");
    let annotations = annotations::parse(&schema_path, &schema_sql, &fresh)?;
    let files = migrations.iter().map(|m| (&*m.path, m.sql.as_str()));
    let (_, versions) = replay(name, &store, files)?;
    let label = format!("extension {name}: schema.sql");
    let provenance = project::parity(&label, &fresh, &versions, &migrations)?;
    Ok(Project {
        root,
        schema_path,
        schema_sql,
        migrations,
        versions,
        fresh,
        catalogs: Vec::new(),
        provenance,
        annotations,
        warnings,
        extension: Some(name.to_string()),
    })
}

/// The store's schema with the extension's `schema_sql` (reported as `path`) on top, in a
/// connection the query checker keeps, and the extension's own objects.
pub(crate) fn on_store(
    name: &str,
    store: &Baseline,
    path: &Path,
    schema_sql: &str,
) -> Result<(Connection, Schema)> {
    let (conn, mut models) = replay(name, store, [(path, schema_sql)])?;
    Ok((conn, models.pop().expect("one model per file")))
}

/// Runs `files` in order on a fresh copy of the store's schema, under the guard, and returns
/// the connection and, after each file, the objects that are not the store's. Refuses a change
/// to the store's own structure that the guard cannot see statement by statement.
fn replay<'a>(
    name: &str,
    store: &Baseline,
    files: impl IntoIterator<Item = (&'a Path, &'a str)>,
) -> Result<(Connection, Vec<Schema>)> {
    let mut conn = project::memory()?;
    execute_file(&conn, &store.schema_path, &store.schema_sql)?;
    let owned: Arc<BTreeSet<String>> = Arc::new(
        store
            .fresh
            .names()
            .into_iter()
            .map(str::to_ascii_lowercase)
            .collect(),
    );
    let refused = Arc::new(Mutex::new(None::<String>));
    install_guard(&mut conn, owned.clone(), refused.clone())?;
    let mut models = Vec::new();
    for (path, sql) in files {
        execute_file(&conn, path, sql).map_err(|e| match (e, take(&refused)) {
            (
                Error::Sql {
                    path,
                    line,
                    statement,
                    ..
                },
                Some(what),
            ) => Error::Extension {
                name: name.to_string(),
                message: format!(
                    "{}:{line}: {what}; an extension owns only its own tables, and the store's \
                     are written by the store's operations\n    {statement}",
                    path.display()
                ),
            },
            (e, _) => e,
        })?;
        let all = project::model(&conn, || format!("extension {name}: {}", path.display()))?;
        let store_part = all.select(|n| owned.contains(&n.to_ascii_lowercase()));
        if let Some(d) = diff::diff(&store.fresh, &store_part).first() {
            return Err(Error::Extension {
                name: name.to_string(),
                message: format!(
                    "{}: changes the store's {}: an extension owns only its own objects",
                    path.display(),
                    d.path()
                ),
            });
        }
        let mine = all.select(|n| !owned.contains(&n.to_ascii_lowercase()));
        check_triggers(&conn, &mine, &refused).map_err(|message| Error::Extension {
            name: name.to_string(),
            message: format!("{}: {message}", path.display()),
        })?;
        models.push(mine);
    }
    conn.authorizer(None::<fn(AuthContext<'_>) -> Authorization>)
        .map_err(|source| Error::Introspect {
            what: format!("extension {name}"),
            source,
        })?;
    Ok((conn, models))
}

/// Refuses a trigger of the extension whose body touches a store object. SQLite authorizes a
/// trigger's body only when a statement that fires it is prepared, so one of each kind is
/// prepared on every table with a trigger (prepared, never run: nothing is written).
fn check_triggers(
    conn: &Connection,
    mine: &Schema,
    refused: &Mutex<Option<String>>,
) -> std::result::Result<(), String> {
    for (trigger, object) in &mine.triggers {
        let Some(table) = mine.tables.get(&object.table) else {
            continue;
        };
        let quoted = |name: &str| format!("\"{}\"", name.replace('"', "\"\""));
        let every_column = table
            .columns
            .keys()
            .map(|c| format!("{0} = {0}", quoted(c)))
            .collect::<Vec<_>>()
            .join(", ");
        let t = quoted(&table.name);
        for firing in [
            format!("INSERT INTO {t} DEFAULT VALUES"),
            format!("UPDATE {t} SET {every_column}"),
            format!("DELETE FROM {t}"),
        ] {
            if conn.prepare(&firing).is_err() {
                if let Some(what) = take(refused) {
                    return Err(format!(
                        "the trigger `{trigger}` on `{}` {}",
                        table.name,
                        what.trim_start_matches("it ")
                    ));
                }
            }
        }
    }
    Ok(())
}

fn take(cell: &Mutex<Option<String>>) -> Option<String> {
    cell.lock().unwrap_or_else(|e| e.into_inner()).take()
}

/// Installs the authorizer that denies every action on an object named in `store` (recording
/// what was denied in `refused`), and allows everything else.
fn install_guard(
    conn: &mut Connection,
    store: Arc<BTreeSet<String>>,
    refused: Arc<Mutex<Option<String>>>,
) -> Result<()> {
    conn.authorizer(Some(move |ctx: AuthContext<'_>| {
        let Some(what) = touches(&ctx.action, &store) else {
            return Authorization::Allow;
        };
        *refused.lock().unwrap_or_else(|e| e.into_inner()) = Some(what);
        Authorization::Deny
    }))
    .map_err(|source| Error::Introspect {
        what: "the extension guard".into(),
        source,
    })
}

/// What `action` does to an object of `store` (lower-case names), if anything; reading one is
/// not touching it.
fn touches(action: &AuthAction<'_>, store: &BTreeSet<String>) -> Option<String> {
    let of = |name: &str| store.contains(&name.to_ascii_lowercase());
    let (verb, name) = match *action {
        AuthAction::Insert { table_name } => ("writes to", table_name),
        AuthAction::Update { table_name, .. } => ("writes to", table_name),
        AuthAction::Delete { table_name } => ("deletes from", table_name),
        AuthAction::AlterTable { table_name, .. } => ("alters", table_name),
        AuthAction::DropTable { table_name } => ("drops", table_name),
        AuthAction::CreateTable { table_name } => ("shadows", table_name),
        AuthAction::CreateView { view_name } => ("shadows", view_name),
        AuthAction::DropView { view_name } => ("drops", view_name),
        AuthAction::CreateIndex { table_name, .. } => ("indexes", table_name),
        AuthAction::DropIndex { table_name, .. } => ("drops an index of", table_name),
        AuthAction::CreateTrigger { table_name, .. } => ("adds a trigger to", table_name),
        AuthAction::DropTrigger { table_name, .. } => ("drops a trigger of", table_name),
        AuthAction::Reindex { index_name } => ("reindexes", index_name),
        _ => return None,
    };
    of(name).then(|| format!("it {verb} the store's `{name}`"))
}
