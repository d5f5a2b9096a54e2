//! Structure: the migrated file equals a fresh one, read from SQLite's pragmas.

use super::*;

/// The structure of `conn` as comparable lines, read from SQLite's pragmas (independent of
/// codegen): tables with WITHOUT ROWID/STRICT, columns (name, declared type, NOT NULL, default,
/// key position, hidden), every index (explicit ones by name, automatic ones by origin) with its
/// key columns, order and collation, foreign keys with actions, triggers and views.
pub(super) fn structure(conn: &Connection) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let tables: Vec<(String, String, bool, bool)> = {
        let mut stmt = conn
            .prepare(
                "SELECT name, type, wr, strict FROM pragma_table_list \
                 WHERE schema = 'main' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
            )
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    };
    for (t, kind, wr, strict) in tables {
        out.insert(format!("{kind} {t} without_rowid={wr} strict={strict}"));
        let mut stmt = conn
            .prepare(
                "SELECT name, type, \"notnull\", dflt_value, pk, hidden FROM pragma_table_xinfo(?1)",
            )
            .unwrap();
        let cols = stmt
            .query_map([&t], |r| {
                Ok(format!(
                    "column {t}.{} {} not_null={} default={:?} pk={} hidden={}",
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, bool>(2)?,
                    r.get::<_, Option<String>>(3)?,
                    r.get::<_, i64>(4)?,
                    r.get::<_, i64>(5)?,
                ))
            })
            .unwrap()
            .collect::<rusqlite::Result<Vec<_>>>()
            .unwrap();
        out.extend(cols);
        let mut stmt = conn
            .prepare("SELECT name, \"unique\", origin, partial FROM pragma_index_list(?1)")
            .unwrap();
        let indexes = stmt
            .query_map([&t], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, bool>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, bool>(3)?,
                ))
            })
            .unwrap()
            .collect::<rusqlite::Result<Vec<_>>>()
            .unwrap();
        for (name, unique, origin, partial) in indexes {
            let mut stmt = conn
                .prepare(
                    "SELECT name, \"desc\", coll FROM pragma_index_xinfo(?1) WHERE key = 1 ORDER BY seqno",
                )
                .unwrap();
            let cols = stmt
                .query_map([&name], |r| {
                    Ok(format!(
                        "{}{} {}",
                        r.get::<_, Option<String>>(0)?
                            .unwrap_or_else(|| "<expr>".into()),
                        if r.get::<_, bool>(1)? { " DESC" } else { "" },
                        r.get::<_, Option<String>>(2)?.unwrap_or_default()
                    ))
                })
                .unwrap()
                .collect::<rusqlite::Result<Vec<_>>>()
                .unwrap();
            // Automatic indexes are named by position; name them by what they are instead.
            let label = if origin == "c" { name } else { origin };
            out.insert(format!(
                "index {t} {label} unique={unique} partial={partial} ({})",
                cols.join(", ")
            ));
        }
        let mut stmt = conn
            .prepare(
                "SELECT id, \"table\", \"from\", \"to\", on_update, on_delete, \"match\" \
                 FROM pragma_foreign_key_list(?1) ORDER BY id, seq",
            )
            .unwrap();
        let mut fks: BTreeMap<i64, (Vec<String>, String)> = BTreeMap::new();
        let rows = stmt
            .query_map([&t], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    format!(
                        "{} {} {} {}",
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(4)?,
                        r.get::<_, String>(5)?,
                        r.get::<_, String>(6)?
                    ),
                    format!(
                        "{}->{}",
                        r.get::<_, String>(2)?,
                        r.get::<_, Option<String>>(3)?.unwrap_or_default()
                    ),
                ))
            })
            .unwrap()
            .collect::<rusqlite::Result<Vec<_>>>()
            .unwrap();
        for (id, target, pair) in rows {
            let e = fks.entry(id).or_insert_with(|| (Vec::new(), target));
            e.0.push(pair);
        }
        for (pairs, target) in fks.into_values() {
            out.insert(format!("foreign key {t} ({}) {target}", pairs.join(", ")));
        }
    }
    let mut stmt = conn
        .prepare("SELECT type, name, tbl_name FROM sqlite_schema WHERE type IN ('trigger', 'view')")
        .unwrap();
    let others = stmt
        .query_map([], |r| {
            Ok(format!(
                "{} {} on {}",
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?
            ))
        })
        .unwrap()
        .collect::<rusqlite::Result<Vec<_>>>()
        .unwrap();
    out.extend(others);
    out
}

/// Asserts that `migrated` has exactly the structure of `fresh`, two ways: the codegen model's
/// fingerprint (what the store's gate compares) and the pragma-level [`structure`].
pub(super) fn assert_same_structure(migrated: &Connection, fresh: &Connection, what: &str) {
    let m = seed_agents_codegen::introspect(migrated).unwrap();
    let f = seed_agents_codegen::introspect(fresh).unwrap();
    let diffs = seed_agents_codegen::diff(&f, &m);
    assert!(
        diffs.is_empty(),
        "{what}: structure differs from a fresh install:\n{}",
        seed_agents_codegen::diff::render(&diffs, "fresh", "migrated", |_| None)
    );
    assert_eq!(m.fingerprint(), f.fingerprint(), "{what}: fingerprint");
    let (ms, fs) = (structure(migrated), structure(fresh));
    let only_migrated: Vec<_> = ms.difference(&fs).collect();
    let only_fresh: Vec<_> = fs.difference(&ms).collect();
    assert!(
        only_migrated.is_empty() && only_fresh.is_empty(),
        "{what}: pragma structure differs from a fresh install\n  only migrated: {only_migrated:#?}\n  only fresh: {only_fresh:#?}"
    );
}

pub(super) fn assert_healthy(conn: &Connection, what: &str) {
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok", "{what}: integrity_check");
    let mut stmt = conn.prepare("PRAGMA foreign_key_check").unwrap();
    let violations: Vec<String> = stmt
        .query_map([], |r| {
            Ok(format!(
                "{} rowid {:?} -> {}",
                r.get::<_, String>(0)?,
                r.get::<_, Option<i64>>(1)?,
                r.get::<_, String>(2)?
            ))
        })
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert!(
        violations.is_empty(),
        "{what}: foreign key violations {violations:?}"
    );
}

/// A fresh install of the store in `dir`.
pub(super) fn fresh_store(dir: &Path) -> Store {
    open_expecting(
        &dir.join("fresh.sqlite"),
        Outcome::Fresh {
            version: SCHEMA_VERSION,
        },
    )
}

pub(super) fn version_stamp(conn: &Connection) -> Value {
    conn.query_row(
        "SELECT value FROM server_config WHERE key = ?1",
        [VERSION_KEY],
        |r| r.get(0),
    )
    .unwrap()
}
