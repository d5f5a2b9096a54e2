//! The PostgreSQL migration plan: the DDL of version [`BASELINE`] as its genesis, then one step
//! per later version, derived from the model's diff or, where data moves, read from a dialect
//! file `postgres/NNNN_name.sql` beside `migrations/`.
//!
//! Invariant: a step is derived only when the diff needs no data: a new column that is
//! `NOT NULL` without a default, or a column whose type or nullability changes, makes the plan
//! fail with the file to write instead. Derived steps change exactly the objects the diff names.

use super::ddl::{self, unsupported};
use super::portable;
use crate::error::{read, Error, Result};
use crate::model::{Schema, Table};
use crate::project::Project;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The first version a PostgreSQL database can be at: every migration after it applies to
/// both backends. A project whose history is shorter starts at its newest version.
pub const BASELINE: u32 = 29;

/// The directory, beside `migrations/`, of the PostgreSQL dialect files.
pub const DIALECT_DIR: &str = "postgres";

/// Where a step's SQL comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The DDL of the baseline version's model.
    Genesis,
    /// The model's diff from the version before.
    Derived,
    /// A dialect file, because data moves.
    Dialect(PathBuf),
}

/// One step of the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The version the step brings a database to.
    pub version: u32,
    /// The migration's file stem (`0032_secret_keys`), or `genesis`.
    pub name: String,
    /// Where the SQL comes from.
    pub source: Source,
    /// The statements, each without a trailing semicolon.
    pub statements: Vec<String>,
}

impl Step {
    /// The step as one script: statements separated by `;` and newlines.
    pub fn script(&self) -> String {
        let mut s = self.statements.join(";\n");
        s.push_str(";\n");
        s
    }
}

/// The whole PostgreSQL side of a project.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The version of the genesis step: [`BASELINE`], or the newest version when the history is
    /// shorter.
    pub baseline: u32,
    /// The statements that create the latest version in an empty schema.
    pub fresh: Vec<String>,
    /// Genesis at the baseline, then one step per version up to the latest.
    pub steps: Vec<Step>,
    /// The fingerprint of the portable structure at every version from the baseline on.
    pub fingerprints: Vec<(u32, String)>,
}

/// Builds the plan of `project`.
///
/// # Errors
/// [`Error::Postgres`] when a version's diff moves data and has no dialect file, when a dialect
/// file names no migration after the baseline, or when the model holds what PostgreSQL cannot
/// express; [`Error::Io`] when a dialect file cannot be read.
pub fn plan(project: &Project) -> Result<Plan> {
    let latest = project.latest_version();
    // An extension's chain is its own, from its genesis: every version is reachable.
    let baseline = match project.extension {
        Some(_) => 0,
        None => BASELINE.min(latest),
    };
    let dialect = dialect_files(&project.root, project, baseline)?;
    let Some(genesis_model) = project.versions.get(baseline as usize) else {
        return Err(unsupported(format!(
            "the migrations end at version {latest}, but no model of version {baseline} was replayed"
        )));
    };
    let mut steps = vec![Step {
        version: baseline,
        name: "genesis".into(),
        source: Source::Genesis,
        statements: ddl::render(genesis_model)?,
    }];
    for m in project.migrations.iter().filter(|m| m.version > baseline) {
        let (source, statements) = match dialect.get(&m.version) {
            Some(path) => {
                let text = read(path)?;
                (Source::Dialect(path.clone()), split_statements(&text))
            }
            None => {
                let before = &project.versions[m.version as usize - 1];
                let after = &project.versions[m.version as usize];
                let statements = derive(before, after).map_err(|why| match why {
                    Underivable::Render(e) => e,
                    Underivable::NeedsData(message) => Error::Postgres {
                        message: format!(
                            "migration {}: {message}; write the PostgreSQL side as {}",
                            m.name,
                            dialect_path(&project.root, &m.name).display()
                        ),
                    },
                })?;
                (Source::Derived, statements)
            }
        };
        steps.push(Step {
            version: m.version,
            name: m.name.clone(),
            source,
            statements,
        });
    }
    let fingerprints = (baseline..=latest)
        .map(|v| (v, portable(&project.versions[v as usize]).fingerprint()))
        .collect();
    Ok(Plan {
        baseline,
        fresh: ddl::render(&project.fresh)?,
        steps,
        fingerprints,
    })
}

/// Where the dialect file of the migration `name` (its file stem) goes.
pub fn dialect_path(root: &Path, name: &str) -> PathBuf {
    root.join(DIALECT_DIR).join(format!("{name}.sql"))
}

/// The dialect files by version, each checked to name a migration after the baseline.
fn dialect_files(root: &Path, project: &Project, baseline: u32) -> Result<BTreeMap<u32, PathBuf>> {
    let dir = root.join(DIALECT_DIR);
    let mut out = BTreeMap::new();
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(source) => return Err(Error::Io { path: dir, source }),
    };
    for entry in entries {
        let path = entry
            .map_err(|source| Error::Io {
                path: dir.clone(),
                source,
            })?
            .path();
        if path.extension().and_then(|e| e.to_str()) != Some("sql") {
            continue;
        }
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let known = project
            .migrations
            .iter()
            .find(|m| m.version > baseline && stem == m.name);
        let Some(m) = known else {
            return Err(Error::Postgres {
                message: format!(
                    "{}: a dialect file is named after a migration after version {baseline} (NNNN_name.sql as in migrations/)",
                    path.display()
                ),
            });
        };
        out.insert(m.version, path);
    }
    Ok(out)
}

/// Splits a dialect file into statements on the `;` that end lines, dropping comment lines.
/// Dialect files hold DDL and plain DML, no function bodies, so this is the whole grammar.
pub fn split_statements(text: &str) -> Vec<String> {
    let body: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .collect();
    body.join("\n")
        .split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Why a step could not be derived.
enum Underivable {
    /// Data has to move: the reason, for the message asking for a dialect file.
    NeedsData(String),
    /// The model holds what PostgreSQL cannot express.
    Render(Error),
}

impl From<Error> for Underivable {
    fn from(e: Error) -> Self {
        Underivable::Render(e)
    }
}

/// The statements of one derived step, in the order they can run.
#[derive(Default)]
struct Derived {
    /// Constraint and index drops, which go before anything they depend on changes.
    constraint_drops: Vec<String>,
    table_drops: Vec<String>,
    creates: Vec<String>,
    alters: Vec<String>,
    keys: Vec<String>,
    foreign: Vec<String>,
    indexes: Vec<String>,
}

/// The statements that turn `before` into `after`.
fn derive(before: &Schema, after: &Schema) -> std::result::Result<Vec<String>, Underivable> {
    let before = portable(before);
    let after = portable(after);
    let mut d = Derived::default();
    for name in before.tables.keys() {
        if !after.tables.contains_key(name) {
            d.table_drops.push(format!("DROP TABLE {name}"));
        }
    }
    for (name, new) in &after.tables {
        match before.tables.get(name) {
            Some(old) => alter_table(old, new, &mut d)?,
            None => {
                d.creates.push(ddl::create_table(new)?);
                for fk in &new.foreign_keys {
                    d.foreign.push(ddl::add_foreign_key(name, fk)?);
                }
                for index in new.indexes.values() {
                    d.indexes.push(ddl::create_index(new, index)?);
                }
            }
        }
    }
    let mut out = d.constraint_drops;
    for part in [
        d.table_drops,
        d.creates,
        d.alters,
        d.keys,
        d.foreign,
        d.indexes,
    ] {
        out.extend(part);
    }
    Ok(out)
}

/// The changes to one table present on both sides.
fn alter_table(old: &Table, new: &Table, d: &mut Derived) -> std::result::Result<(), Underivable> {
    let t = &new.name;
    for fk in old.foreign_keys.difference(&new.foreign_keys) {
        let name = ddl::foreign_key_name(t, fk)?;
        d.constraint_drops
            .push(format!("ALTER TABLE {t} DROP CONSTRAINT {name}"));
    }
    for (name, index) in &old.indexes {
        if new.indexes.get(name) != Some(index) {
            d.constraint_drops.push(format!("DROP INDEX {name}"));
        }
    }
    for columns in old.uniques.difference(&new.uniques) {
        let name = ddl::unique_name(t, columns)?;
        d.constraint_drops
            .push(format!("ALTER TABLE {t} DROP CONSTRAINT {name}"));
    }
    let key_changed = old.primary_key != new.primary_key;
    if key_changed && !old.primary_key.is_empty() {
        let name = ddl::primary_key_name(t);
        d.constraint_drops
            .push(format!("ALTER TABLE {t} DROP CONSTRAINT {name}"));
    }
    for name in old.columns.keys() {
        if !new.columns.contains_key(name) {
            d.alters.push(format!("ALTER TABLE {t} DROP COLUMN {name}"));
        }
    }
    for (name, column) in &new.columns {
        match old.columns.get(name) {
            None if column.not_null && column.default.is_none() => {
                return Err(Underivable::NeedsData(format!(
                    "{t}.{name} is new, NOT NULL and without a default, so its existing rows need values"
                )));
            }
            None => {
                let def = ddl::column_definition(column)?;
                d.alters.push(format!("ALTER TABLE {t} ADD COLUMN {def}"));
            }
            Some(was) if was.decl_type != column.decl_type || was.not_null != column.not_null => {
                return Err(Underivable::NeedsData(format!(
                    "{t}.{name} changes from `{}` to `{}`, which rewrites its values",
                    was.describe(),
                    column.describe()
                )));
            }
            Some(was) if was.default != column.default => d.alters.push(match &column.default {
                Some(v) => format!("ALTER TABLE {t} ALTER COLUMN {name} SET DEFAULT {v}"),
                None => format!("ALTER TABLE {t} ALTER COLUMN {name} DROP DEFAULT"),
            }),
            Some(_) => {}
        }
    }
    if key_changed && !new.primary_key.is_empty() {
        let name = ddl::primary_key_name(t);
        let columns = new.primary_key.join(", ");
        d.keys.push(format!(
            "ALTER TABLE {t} ADD CONSTRAINT {name} PRIMARY KEY ({columns})"
        ));
    }
    for columns in new.uniques.difference(&old.uniques) {
        let name = ddl::unique_name(t, columns)?;
        let list = columns.join(", ");
        d.keys.push(format!(
            "ALTER TABLE {t} ADD CONSTRAINT {name} UNIQUE ({list})"
        ));
    }
    for fk in new.foreign_keys.difference(&old.foreign_keys) {
        d.foreign.push(ddl::add_foreign_key(t, fk)?);
    }
    for (name, index) in &new.indexes {
        if old.indexes.get(name) != Some(index) {
            d.indexes.push(ddl::create_index(new, index)?);
        }
    }
    Ok(())
}
