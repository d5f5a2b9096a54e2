//! Extension schemas: a server crate's own `schema.sql` and `migrations/`, checked on top of the
//! store's newest schema as the store's are, and refused when they touch a store object.

use crate::common::{assert_mentions, schema_dir};
use seed_agents_codegen::{extension, postgres, query::Checker, Baseline, Builder, Error};
use std::fs;
use std::path::Path;

const GENESIS: &str = "CREATE TABLE user_preferences (\n    account_id TEXT PRIMARY KEY NOT NULL,\n    theme TEXT NOT NULL DEFAULT 'system'\n) WITHOUT ROWID;\n";
const PAGE_SIZE: &str =
    "ALTER TABLE user_preferences ADD COLUMN page_size INTEGER NOT NULL DEFAULT 50;\n";
const SCHEMA: &str = "-- Preferences.\nCREATE TABLE user_preferences (\n    -- The account.\n    account_id TEXT PRIMARY KEY NOT NULL,\n    -- The theme.\n    -- @enum(light, dark, system)\n    theme TEXT NOT NULL DEFAULT 'system',\n    -- Runs per page.\n    page_size INTEGER NOT NULL DEFAULT 50\n) WITHOUT ROWID;\n";

/// An extension directory with `schema` and the migrations `files` (name, SQL).
fn extension_dir(schema: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("schema.sql"), schema).unwrap();
    fs::create_dir(dir.path().join("migrations")).unwrap();
    for (name, sql) in files {
        fs::write(dir.path().join("migrations").join(name), sql).unwrap();
    }
    dir
}

fn good() -> tempfile::TempDir {
    extension_dir(
        SCHEMA,
        &[
            ("0000_genesis.sql", GENESIS),
            ("0001_page_size.sql", PAGE_SIZE),
        ],
    )
}

fn load_err(dir: &Path) -> String {
    match extension::load("prefs", dir, schema_dir()) {
        Ok(_) => panic!("expected the extension to be refused"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn an_extension_loads_with_its_own_objects_and_chain() {
    let dir = good();
    let p = extension::load("prefs", dir.path(), schema_dir()).unwrap();
    assert_eq!(p.extension.as_deref(), Some("prefs"));
    assert_eq!(p.latest_version(), 1);
    assert_eq!(
        p.fresh.tables.keys().collect::<Vec<_>>(),
        ["user_preferences"],
        "the store's tables are not the extension's"
    );
    assert_eq!(p.versions.len(), 2);
    assert!(!p.versions[0].tables["user_preferences"]
        .columns
        .contains_key("page_size"));
    // Unlocked migrations are a warning, as the store's are.
    assert!(p.warnings[0].contains("not locked"), "{:?}", p.warnings);
    // Its PostgreSQL chain starts at its own genesis: every version migrates.
    let plan = postgres::plan(&p).unwrap();
    assert_eq!(plan.baseline, 0);
    assert_eq!(plan.steps.len(), 2);
    assert!(
        plan.steps[1].script().contains("page_size"),
        "{:?}",
        plan.steps
    );
}

#[test]
fn drift_in_an_extension_names_the_column_and_the_migration() {
    let dir = extension_dir(
        &SCHEMA.replace(
            "page_size INTEGER NOT NULL DEFAULT 50\n",
            "page_size INTEGER NOT NULL DEFAULT 50,\n    -- Density.\n    density TEXT\n",
        ),
        &[
            ("0000_genesis.sql", GENESIS),
            ("0001_page_size.sql", PAGE_SIZE),
        ],
    );
    assert_mentions(
        &load_err(dir.path()),
        &[
            "extension prefs: schema.sql",
            "table user_preferences, column density",
            "no migration adds this column; table user_preferences last touched by migrations/0001_page_size.sql",
        ],
    );
}

#[test]
fn an_extension_that_touches_a_store_object_is_refused_naming_it() {
    for (sql, says) in [
        (
            "ALTER TABLE runs ADD COLUMN mood TEXT;\n",
            "alters the store's `runs`",
        ),
        ("DROP TABLE accounts;\n", "drops the store's `accounts`"),
        (
            "CREATE TABLE IF NOT EXISTS sessions (id TEXT);\n",
            "shadows the store's `sessions`",
        ),
        (
            "CREATE INDEX runs_by_mood ON runs (title);\n",
            "indexes the store's `runs`",
        ),
        (
            "INSERT INTO server_config (key, value) VALUES ('x', 'y');\n",
            "writes to the store's `server_config`",
        ),
        (
            "DELETE FROM accounts;\n",
            "deletes from the store's `accounts`",
        ),
        (
            "CREATE TRIGGER t AFTER INSERT ON runs BEGIN SELECT 1; END;\n",
            "adds a trigger to the store's `runs`",
        ),
        (
            "CREATE TRIGGER audit_prefs AFTER UPDATE OF theme ON user_preferences \
             BEGIN DELETE FROM sessions WHERE account_id = new.account_id; END;\n",
            "the trigger `audit_prefs` on `user_preferences` deletes from the store's `sessions`",
        ),
    ] {
        let dir = extension_dir(
            SCHEMA,
            &[
                ("0000_genesis.sql", GENESIS),
                ("0001_page_size.sql", &format!("{PAGE_SIZE}{sql}")),
            ],
        );
        let msg = load_err(dir.path());
        assert_mentions(&msg, &["extension prefs", "0001_page_size.sql", says]);
    }
}

#[test]
fn a_bad_extension_name_is_refused() {
    let dir = good();
    for name in ["", "Prefs", "1prefs", "pre-fs", "a:b"] {
        let e = extension::load(name, dir.path(), schema_dir()).unwrap_err();
        assert!(matches!(e, Error::Extension { .. }), "{name:?}: {e}");
    }
}

#[test]
fn the_builder_writes_the_extension_module_with_its_declaration_and_macros() {
    let dir = good();
    let out = tempfile::tempdir().unwrap();
    let output = Builder::new(dir.path())
        .extension("prefs", schema_dir())
        .module("crate::storage")
        .out_dir(out.path())
        .cargo_directives(false)
        .strict_docs(true)
        .run()
        .unwrap();
    assert_eq!(output.path, out.path().join("prefs.rs"));
    let code = fs::read_to_string(&output.path).unwrap();
    for part in [
        "pub const EXTENSION: ::seed_agents_store::__private::Extension",
        "name: \"prefs\"",
        "macro_rules! query",
        "::seed_agents_store::__private::query_in!(\"prefs\"",
        "\"crate::storage\"",
        "pub mod user_preferences",
    ] {
        assert!(code.contains(part), "the module lacks {part:?}");
    }
    assert!(
        !code.contains("pub mod runs"),
        "the store's tables are the store's"
    );
}

#[test]
fn the_checker_of_an_extension_knows_both_schemas() {
    let store = Baseline::from_sql(
        schema_dir().join("schema.sql"),
        fs::read_to_string(schema_dir().join("schema.sql")).unwrap(),
    )
    .unwrap();
    let checker = Checker::new(store, "::rt", "::schema")
        .unwrap()
        .with_extension("prefs", SCHEMA, "crate::db")
        .unwrap();
    let out = checker
        .query(
            quote::quote!(
                "SELECT p.theme, r.id FROM user_preferences p JOIN runs r ON r.account_id = p.account_id WHERE p.page_size > ?1",
                10
            ),
        )
        .unwrap()
        .to_string();
    assert!(
        out.contains("crate :: db :: user_preferences :: Theme"),
        "{out}"
    );
    let e = checker
        .query(quote::quote!("SELECT nope FROM user_preferences"))
        .unwrap_err();
    assert!(e.to_string().contains("no such column"), "{e}");
}
