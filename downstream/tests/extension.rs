//! The `prefs` extension end to end, on SQLite and (when a server is configured) PostgreSQL:
//! installed and migrated beside the store, written only through its own write path, joined
//! with store tables by checked SQL, and guarded by the store's gate.

use seed_agents_downstream::db::{self, user_preferences, user_preferences::Theme};
use seed_agents_downstream::{dashboard, open, set_preferences, DashboardLine};
use seed_agents_store::runs::NewRun;
use seed_agents_store::schema::runs::{Kind, Origin, Status};
use seed_agents_store::{Db, Error, ErrorKind, Outcome, Refusal, Store};
use std::path::{Path, PathBuf};

mod common;
use common::{on_both, previous_releases, set_key};

const T: i64 = 1_764_000_000_000;
const KEY: &str = "extension:prefs:schema_migration_version";

/// The refusal of `e`, on either backend.
fn refusal(e: &Error) -> &Refusal {
    match e {
        Error::Refused { reason, .. } | Error::PostgresRefused { reason, .. } => reason,
        other => panic!("not a refusal: {other}"),
    }
}

/// What the refusal `e` advises, on either backend.
fn advice(location: &Path, e: &Error) -> String {
    match e {
        Error::PostgresRefused { database, reason } => reason.postgres_advice(database),
        _ => refusal(e).advice(location),
    }
}

/// A workflow run of `account`, through the store's own operations.
fn run(store: &Store, account: &str, title: &str) -> String {
    support::execution::agent_in(store, account, &format!("agent-{title}"));
    let mut new = NewRun::new(account, Kind::Workflow, Origin::Workflow, title);
    new.agent_id = Some(format!("agent-{title}"));
    store.enqueue_run(&new).unwrap().id
}

fn prefs(store: &Store, account: &str) -> Option<user_preferences::Row> {
    user_preferences::get(&store.reading().unwrap(), account).unwrap()
}

#[test]
fn the_extension_is_installed_written_joined_and_kept_across_a_restart() {
    on_both("ext_lifecycle", |location| {
        let store = open(location).unwrap();
        assert_eq!(
            store.outcome(),
            Outcome::Fresh {
                version: seed_agents_store::schema::SCHEMA_VERSION
            }
        );
        assert_eq!(common::key(location, KEY), db::SCHEMA_VERSION.to_string());
        let first = run(&store, "acct", "a");
        let second = run(&store, "acct", "b");
        let line = |id: &str, theme| DashboardLine {
            id: id.to_string(),
            status: Status::Queued,
            theme,
        };
        assert_eq!(
            dashboard(&store, "acct").unwrap(),
            [line(&first, None), line(&second, None)]
        );
        set_preferences(&store, "acct", Theme::Dark, 1, T).unwrap();
        assert_eq!(
            dashboard(&store, "acct").unwrap(),
            [line(&first, Some(Theme::Dark))],
            "the page size of the extension's row limits the store's runs"
        );
        drop(store);

        let store = open(location).unwrap();
        assert!(matches!(store.outcome(), Outcome::Current { .. }));
        let row = prefs(&store, "acct").expect("kept across the restart");
        assert_eq!(
            (row.theme, row.page_size, row.updated_at),
            (Theme::Dark, 1, T)
        );
        // The upsert path of the same checked statement.
        set_preferences(&store, "acct", Theme::Light, 2, T + 1).unwrap();
        assert_eq!(prefs(&store, "acct").unwrap().theme, Theme::Light);
        assert_eq!(dashboard(&store, "acct").unwrap().len(), 2);
    });
}

#[test]
fn writing_a_store_table_through_the_extension_write_path_is_refused_and_rolled_back() {
    on_both("ext_guard", |location| {
        let store = open(location).unwrap();
        store.touch_account("acct").unwrap();
        let e = store
            .write_extension(|tx| {
                let row = user_preferences::Row {
                    account_id: "acct".into(),
                    theme: Theme::System,
                    page_size: 50,
                    updated_at: T,
                };
                user_preferences::insert(tx, &row)?;
                seed_agents_store::query!("DELETE FROM accounts WHERE id = ?1", "acct")
                    .execute(tx)?;
                Ok(())
            })
            .unwrap_err();
        assert!(matches!(e, Error::StoreTableWrite { .. }), "{e}");
        assert_eq!(e.kind(), ErrorKind::Invalid);
        assert!(e.to_string().contains("accounts"), "{e}");
        // Nothing of the write stayed: neither the store row it deleted nor its own row.
        let accounts =
            support::backend::query_strings(location, "SELECT id FROM accounts ORDER BY id");
        assert_eq!(accounts, ["acct"]);
        assert_eq!(prefs(&store, "acct"), None);
        // Nor may it change the schema, a store table's or its own.
        let ddl: [fn(&Db) -> seed_agents_store::Result<usize>; 3] = [
            |tx| seed_agents_store::query!("ALTER TABLE accounts ADD COLUMN z TEXT").execute(tx),
            |tx| seed_agents_store::query!("DROP INDEX runs_by_parent_tool_call").execute(tx),
            |tx| {
                seed_agents_store::query!(
                    "CREATE INDEX accounts_by_update ON accounts (updated_at)"
                )
                .execute(tx)
            },
        ];
        for statement in ddl {
            let e = store.write_extension(statement).unwrap_err();
            assert!(matches!(e, Error::StoreTableWrite { .. }), "{e}");
        }
        // The store's own operations and the extension's write path still work after it.
        store.touch_account("other").unwrap();
        set_preferences(&store, "other", Theme::Dark, 10, T).unwrap();
        assert_eq!(prefs(&store, "other").unwrap().page_size, 10);
    });
}

#[test]
fn on_sqlite_raw_sql_through_the_write_path_cannot_write_store_tables_or_the_schema() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path().join("agents.sqlite")).unwrap();
    store.touch_account("acct").unwrap();
    // A statement the store prepared and cached is judged again under the extension's rights.
    for sql in [
        "UPDATE accounts SET updated_at = 0",
        "INSERT INTO server_config (key, value) VALUES ('x', 'y')",
        "CREATE TABLE sneaky (id TEXT)",
        "DROP TABLE user_preferences",
        "COMMIT",
        "PRAGMA foreign_keys = OFF",
    ] {
        let e = store
            .write_extension(|tx| {
                let conn = tx.as_sqlite().unwrap();
                conn.execute(sql, []).map_err(Error::Sqlite)?;
                Ok(())
            })
            .unwrap_err();
        assert!(matches!(e, Error::StoreTableWrite { .. }), "{sql}: {e}");
    }
    // A store operation after them is not held to the extension's rights.
    store.touch_account("acct").unwrap();
    drop(store);
    open(dir.path().join("agents.sqlite")).expect("the file's structure is intact");
}

#[test]
fn opening_without_declaring_the_extension_is_refused_naming_it() {
    on_both("ext_undeclared", |location| {
        open(location).unwrap();
        let e = Store::open(location).unwrap_err();
        assert!(
            matches!(refusal(&e), Refusal::UndeclaredExtension { name, .. } if name == "prefs"),
            "{e}"
        );
        let text = format!("{e} {}", advice(location, &e));
        assert!(text.contains("prefs"), "{text}");
        assert!(text.contains("do not delete it"), "{text}");
        assert!(
            !text.contains("move"),
            "no advice moves a file that is fine: {text}"
        );
        open(location).expect("declared, it opens");
    });
}

#[test]
fn an_extension_newer_than_this_program_is_refused_naming_it() {
    on_both("ext_ahead", |location| {
        open(location).unwrap();
        set_key(location, KEY, "9");
        let e = open(location).unwrap_err();
        assert_eq!(
            refusal(&e),
            &Refusal::ExtensionAhead {
                name: "prefs".into(),
                found: 9,
                supported: db::SCHEMA_VERSION,
            }
        );
        assert!(advice(location, &e).contains("prefs"), "{e}");
    });
}

#[test]
fn a_table_of_nobody_and_a_changed_extension_table_are_refused() {
    on_both("ext_structure", |location| {
        open(location).unwrap();
        support::backend::exec(location, "CREATE TABLE stray (id TEXT)", &[]);
        let e = open(location).unwrap_err();
        assert!(
            matches!(refusal(&e), Refusal::StructureMismatch { unowned, diff, .. }
                if unowned == &["stray"] && diff.contains("table stray")),
            "{e}"
        );
        let advice = advice(location, &e);
        assert!(advice.contains("declare it as an extension"), "{advice}");
        assert!(
            !advice.contains("backup"),
            "a table added on purpose is not damage: {advice}"
        );
        support::backend::exec(location, "DROP TABLE stray", &[]);
        support::backend::exec(
            location,
            "ALTER TABLE user_preferences ADD COLUMN shadow TEXT",
            &[],
        );
        let e = open(location).unwrap_err();
        assert!(
            matches!(refusal(&e), Refusal::ExtensionStructureMismatch { name, .. } if name == "prefs"),
            "{e}"
        );
        assert!(e.to_string().contains("shadow"), "{e}");
    });
}

#[test]
fn a_store_release_with_a_new_migration_opens_a_file_with_the_extension_intact() {
    on_both("ext_upgrade", |location| {
        previous_releases(
            location,
            "prefs",
            db::MIGRATIONS[0].sql,
            db::POSTGRES_MIGRATIONS[0].sql,
        );
        support::backend::exec(
            location,
            "INSERT INTO user_preferences (account_id, theme, updated_at) VALUES ('acct', 'dark', ?1)",
            &[&T],
        );
        let latest = seed_agents_store::schema::SCHEMA_VERSION;
        let store = open(location).unwrap();
        assert_eq!(
            store.outcome(),
            Outcome::Migrated {
                from: latest - 1,
                to: latest
            }
        );
        assert_eq!(common::key(location, KEY), db::SCHEMA_VERSION.to_string());
        let row = prefs(&store, "acct").expect("the extension's row survived both migrations");
        assert_eq!((row.theme, row.page_size), (Theme::Dark, 50));
        drop(store);
        assert!(matches!(
            open(location).unwrap().outcome(),
            Outcome::Current { .. }
        ));
    });
}

#[test]
fn read_only_opens_check_the_extension_too() {
    let dir = tempfile::tempdir().unwrap();
    let path: PathBuf = dir.path().join("agents.sqlite");
    Store::open(&path).unwrap();
    let e = Store::options()
        .extension(db::EXTENSION)
        .open_read_only(&path)
        .unwrap_err();
    assert!(matches!(e, Error::ReadOnly { .. }), "{e}");
    assert!(e.to_string().contains("prefs"), "{e}");
    open(&path).unwrap();
    let store = Store::options()
        .extension(db::EXTENSION)
        .open_read_only(&path)
        .unwrap();
    assert_eq!(prefs(&store, "acct"), None);
}

#[test]
fn the_same_extension_twice_is_a_declaration_error() {
    let dir = tempfile::tempdir().unwrap();
    let e = Store::options()
        .extension(db::EXTENSION)
        .extension(db::EXTENSION)
        .open(dir.path().join("agents.sqlite"))
        .unwrap_err();
    assert!(matches!(e, Error::ExtensionDeclaration { .. }), "{e}");
    assert!(
        !dir.path().join("agents.sqlite").exists(),
        "nothing was opened"
    );
}

#[test]
fn a_panicking_extension_write_gives_the_store_its_rights_back() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path().join("agents.sqlite")).unwrap();
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        store.write_extension(|_| -> seed_agents_store::Result<()> { panic!("boom") })
    }));
    assert!(panicked.is_err());
    store
        .touch_account("acct")
        .expect("the store's own write is not held to the extension's rights");
    set_preferences(&store, "acct", Theme::Dark, 5, T).unwrap();
}
