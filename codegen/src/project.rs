//! Loads schema.sql and migrations/, replays both in SQLite and checks that they agree.
//!
//! The invariant kept here: a [`Project`] exists only when the baseline equals genesis plus every
//! migration, every migration is numbered without gaps, and every locked migration is unchanged.

use crate::annotations::{self, Annotations};
use crate::diff::{self, Difference};
use crate::error::{read, Error, Result};
use crate::introspect::introspect;
use crate::lock;
use crate::migration::{read_migrations, Migration};
use crate::model::Schema;
use crate::sql;
use rusqlite::Connection;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// When an object appeared and when a migration last changed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Touch {
    /// The version that created it.
    pub introduced: u32,
    /// The last version that changed its definition.
    pub changed: u32,
}

/// Per-object history across versions 0..=N.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Provenance {
    /// Tables by name.
    pub tables: BTreeMap<String, Touch>,
    /// Columns by (table, column).
    pub columns: BTreeMap<(String, String), Touch>,
    /// Indexes by (table, index).
    pub indexes: BTreeMap<(String, String), Touch>,
}

/// Everything codegen knows about a schema directory, checked for parity.
#[derive(Debug, Clone)]
pub struct Project {
    /// The directory holding schema.sql and migrations/.
    pub root: PathBuf,
    /// Path of schema.sql.
    pub schema_path: PathBuf,
    /// schema.sql as written.
    pub schema_sql: String,
    /// Genesis first, then 1..=N.
    pub migrations: Vec<Migration>,
    /// The structure at every version 0..=N.
    pub versions: Vec<Schema>,
    /// The structure of a fresh install from schema.sql (equal to `versions[N]`, with schema.sql's
    /// column order).
    pub fresh: Schema,
    /// The catalog texts ([`introspect::catalog_text`](crate::introspect::catalog_text)) of the
    /// newest version as this build writes it: a fresh install, then (when it differs) a
    /// database migrated from genesis.
    pub catalogs: Vec<String>,
    /// Where each object came from.
    pub provenance: Provenance,
    /// Doc comments and annotations of schema.sql.
    pub annotations: Annotations,
    /// Things worth saying that do not fail the build (an unlocked new migration).
    pub warnings: Vec<String>,
    /// The extension's name when this is an extension schema
    /// ([`extension::load`](crate::extension::load)): its models then hold its own objects
    /// only, and its chain starts at its own genesis on both backends.
    pub extension: Option<String>,
}

impl Project {
    /// Reads, replays and checks `root/schema.sql` and `root/migrations/`.
    ///
    /// # Errors
    /// Any unreadable file, bad migration name or numbering, SQL that SQLite rejects, an edited
    /// shipped migration, a structural difference between the baseline and the migrations, or a
    /// bad annotation.
    pub fn load(root: impl AsRef<Path>) -> Result<Project> {
        let root = root.as_ref().to_path_buf();
        let schema_path = root.join("schema.sql");
        let schema_sql = read(&schema_path)?;
        let migrations = read_migrations(&root.join("migrations"))?;
        let warnings = check_lock(&root, &migrations)?;

        let Baseline {
            schema_path,
            schema_sql,
            fresh,
            catalog,
            annotations,
        } = Baseline::from_sql(schema_path, schema_sql)?;
        let (versions, migrated) = replay_versions(&migrations)?;
        let mut catalogs = vec![catalog];
        if migrated != catalogs[0] {
            catalogs.push(migrated);
        }
        let provenance = parity("schema.sql", &fresh, &versions, &migrations)?;
        Ok(Project {
            root,
            schema_path,
            schema_sql,
            migrations,
            versions,
            fresh,
            catalogs,
            provenance,
            annotations,
            warnings,
            extension: None,
        })
    }

    /// The newest version: the number of the last migration.
    pub fn latest_version(&self) -> u32 {
        self.migrations.last().map_or(0, |m| m.version)
    }

    /// Every file the output depends on (for `cargo:rerun-if-changed`).
    pub fn inputs(&self) -> Vec<PathBuf> {
        let mut v = vec![self.schema_path.clone(), self.root.join("migrations")];
        v.push(self.root.join("migrations").join(lock::LOCK_FILE));
        v.extend(self.migrations.iter().map(|m| m.path.clone()));
        // The PostgreSQL dialect files, when there are any (a path that does not exist would
        // make cargo rerun the build script every time).
        let dialect = self.root.join(crate::postgres::DIALECT_DIR);
        if dialect.is_dir() {
            v.push(dialect);
        }
        v
    }
}

/// schema.sql alone: its structure and annotations, without the migration history. This is what
/// the query macros check SQL against.
#[derive(Debug, Clone)]
pub struct Baseline {
    /// The path schema.sql is reported under.
    pub schema_path: PathBuf,
    /// schema.sql as written.
    pub schema_sql: String,
    /// The structure SQLite builds from it.
    pub fresh: Schema,
    /// The catalog text of that fresh install
    /// ([`introspect::catalog_text`](crate::introspect::catalog_text)).
    pub catalog: String,
    /// Its doc comments and annotations.
    pub annotations: Annotations,
}

impl Baseline {
    /// Replays `sql` (schema.sql, reported as `path`) in SQLite and parses its annotations.
    ///
    /// # Errors
    /// SQL that SQLite rejects, or a bad annotation.
    pub fn from_sql(path: impl Into<PathBuf>, sql: impl Into<String>) -> Result<Baseline> {
        let schema_path = path.into();
        let schema_sql = sql.into();
        let (fresh, catalog) = replay_fresh(&schema_path, &schema_sql)?;
        let annotations = annotations::parse(&schema_path, &schema_sql, &fresh)?;
        Ok(Baseline {
            schema_path,
            schema_sql,
            fresh,
            catalog,
            annotations,
        })
    }
}

/// The history of `versions` (one per migration), once `fresh` (schema.sql, reported as
/// `label`) is shown to equal the newest of them.
///
/// # Errors
/// [`Error::Drift`], each difference blamed on the migration that last touched it.
pub(crate) fn parity(
    label: &str,
    fresh: &Schema,
    versions: &[Schema],
    migrations: &[Migration],
) -> Result<Provenance> {
    let provenance = provenance(versions);
    let latest = versions.last().expect("genesis always exists");
    let diffs = diff::diff(fresh, latest);
    if diffs.is_empty() {
        return Ok(provenance);
    }
    let version = migrations.len() - 1;
    let report = diff::render(
        &diffs,
        label,
        &format!("migrations (version {version})"),
        |d| Some(blame(d, &provenance, migrations)),
    );
    Err(Error::Drift { report })
}

/// Checks `root/migrations/migrations.lock` against `migrations`: the warning for a migration
/// not locked yet, or the error for a locked one that changed.
pub(crate) fn check_lock(root: &Path, migrations: &[Migration]) -> Result<Vec<String>> {
    let lock_path = root.join("migrations").join(lock::LOCK_FILE);
    let lock_text = match fs::read_to_string(&lock_path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => {
            return Err(Error::Io {
                path: lock_path,
                source,
            })
        }
    };
    match lock::check(&lock_path, &lock_text, migrations) {
        Ok(()) => Ok(Vec::new()),
        Err(e @ Error::NotLocked { .. }) => Ok(vec![e.to_string()]),
        Err(e) => Err(e),
    }
}

/// "last touched by migrations/NNNN_x.sql" (or why no migration did) for one difference.
fn blame(d: &Difference, p: &Provenance, migrations: &[Migration]) -> String {
    let file = |v: u32| format!("migrations/{}.sql", migrations[v as usize].name);
    let table = p.tables.get(&d.table);
    if let Some(col) = &d.column {
        if let Some(t) = p.columns.get(&(d.table.clone(), col.clone())) {
            return format!("column last touched by {}", file(t.changed));
        }
        return match table {
            Some(t) => format!(
                "no migration adds this column; table {} last touched by {}",
                d.table,
                file(t.changed)
            ),
            None => format!("no migration creates table {}", d.table),
        };
    }
    if let Some(obj) = d.object.as_deref().and_then(|o| o.strip_prefix("index ")) {
        if let Some(t) = p.indexes.get(&(d.table.clone(), obj.to_string())) {
            return format!("index last touched by {}", file(t.changed));
        }
        return format!(
            "no migration creates this index{}",
            table
                .map(|t| format!("; table {} last touched by {}", d.table, file(t.changed)))
                .unwrap_or_default()
        );
    }
    match table {
        Some(t) => format!("table last touched by {}", file(t.changed)),
        None => format!("no migration creates table {}", d.table),
    }
}

/// Runs `sql` statement by statement so a failure names its file, line and statement.
pub fn execute_file(conn: &Connection, path: &Path, sql_text: &str) -> Result<()> {
    let stmts = sql::statements(sql_text).map_err(|e| Error::Lex {
        path: path.to_path_buf(),
        line: e.line,
        what: e.what,
    })?;
    for s in stmts {
        conn.execute_batch(s.text).map_err(|e| Error::Sql {
            path: path.to_path_buf(),
            line: s.line,
            statement: s.text.to_string(),
            message: e.to_string(),
        })?;
    }
    Ok(())
}

pub(crate) fn memory() -> Result<Connection> {
    Connection::open_in_memory().map_err(|source| Error::Introspect {
        what: "an in-memory database".into(),
        source,
    })
}

pub(crate) fn model(conn: &Connection, what: impl Fn() -> String) -> Result<Schema> {
    introspect(conn).map_err(|source| Error::Introspect {
        what: what(),
        source,
    })
}

/// The structure of a fresh install from `sql_text`, and its catalog text.
fn replay_fresh(path: &Path, sql_text: &str) -> Result<(Schema, String)> {
    let conn = memory()?;
    execute_file(&conn, path, sql_text)?;
    let what = || "schema.sql".to_string();
    Ok((model(&conn, what)?, catalog(&conn, what)?))
}

/// The structure at every version, and the catalog text of the newest.
fn replay_versions(migrations: &[Migration]) -> Result<(Vec<Schema>, String)> {
    let conn = memory()?;
    let mut versions = Vec::with_capacity(migrations.len());
    let what = |v: u32| move || format!("migrations at version {v}");
    for m in migrations {
        execute_file(&conn, &m.path, &m.sql)?;
        versions.push(model(&conn, what(m.version))?);
    }
    let latest = migrations.last().map_or(0, |m| m.version);
    Ok((versions, catalog(&conn, what(latest))?))
}

fn catalog(conn: &Connection, what: impl Fn() -> String) -> Result<String> {
    match crate::introspect::catalog_text(conn) {
        Ok(Some(text)) => Ok(text),
        Ok(None) => Err(Error::Introspect {
            what: what(),
            source: rusqlite::Error::InvalidQuery,
        }),
        Err(source) => Err(Error::Introspect {
            what: what(),
            source,
        }),
    }
}

fn provenance(versions: &[Schema]) -> Provenance {
    let mut p = Provenance::default();
    let empty = Schema::default();
    for (v, schema) in versions.iter().enumerate() {
        let v = v as u32;
        let prev = if v == 0 {
            &empty
        } else {
            &versions[v as usize - 1]
        };
        for (name, table) in &schema.tables {
            let before = prev.tables.get(name);
            touch(
                &mut p.tables,
                name.clone(),
                v,
                before.is_none(),
                before != Some(table),
            );
            for (cname, col) in &table.columns {
                let b = before.and_then(|t| t.columns.get(cname));
                touch(
                    &mut p.columns,
                    (name.clone(), cname.clone()),
                    v,
                    b.is_none(),
                    b != Some(col),
                );
            }
            for (iname, idx) in &table.indexes {
                let b = before.and_then(|t| t.indexes.get(iname));
                touch(
                    &mut p.indexes,
                    (name.clone(), iname.clone()),
                    v,
                    b.is_none(),
                    b != Some(idx),
                );
            }
        }
    }
    p
}

fn touch<K: Ord>(map: &mut BTreeMap<K, Touch>, key: K, v: u32, new: bool, changed: bool) {
    if new {
        map.insert(
            key,
            Touch {
                introduced: v,
                changed: v,
            },
        );
    } else if changed {
        if let Some(t) = map.get_mut(&key) {
            t.changed = v;
        }
    }
}
