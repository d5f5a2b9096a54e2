//! Drift is a build error: broken copies of the real schema directory must fail to load with a
//! message naming the object and the migration, and harmless edits must pass.

use crate::common::{assert_mentions, copy, edit, load_err, migration, next, schema, schema_dir};
use seed_agents_codegen::{Builder, Error, Project};
use std::fs;

#[test]
fn the_real_project_loads_clean() {
    let p = Project::load(schema_dir()).unwrap();
    assert_eq!(p.latest_version(), 36);
    assert_eq!(p.versions.len(), 37);
    assert_eq!(p.fresh.tables.len(), 26);
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
}

#[test]
fn a_baseline_column_no_migration_adds_names_the_column_and_the_last_migration() {
    let dir = copy();
    edit(
        &schema(&dir),
        "    description TEXT,\n",
        "    description TEXT,\n    mood TEXT,\n",
    );
    let msg = load_err(&dir);
    assert_mentions(
        &msg,
        &[
            "table sessions, column mood",
            "schema.sql has `mood TEXT`",
            "has nothing",
            "no migration adds this column; table sessions last touched by migrations/0023_session_latest_message.sql",
        ],
    );
}

#[test]
fn an_index_only_a_migration_creates_names_the_index_and_the_migration() {
    let dir = copy();
    let (version, name) = next("runs_by_model");
    fs::write(
        migration(&dir, &name),
        "CREATE INDEX runs_by_model ON runs (model);\n",
    )
    .unwrap();
    let msg = load_err(&dir);
    assert_mentions(
        &msg,
        &[
            "table runs, index runs_by_model",
            "schema.sql has nothing",
            &format!("migrations (version {version}) has `runs (model)`"),
            &format!("index last touched by migrations/{name}"),
        ],
    );
}

#[test]
fn a_different_default_names_the_column_and_its_migration() {
    let dir = copy();
    edit(
        &schema(&dir),
        "title_source TEXT NOT NULL DEFAULT 'system'",
        "title_source TEXT NOT NULL DEFAULT 'user'",
    );
    let msg = load_err(&dir);
    assert_mentions(
        &msg,
        &[
            "table sessions, column title_source",
            "DEFAULT 'user'",
            "DEFAULT 'system'",
            "column last touched by migrations/0005_session_title_source.sql",
        ],
    );
}

#[test]
fn a_different_not_null_names_the_column_and_its_migration() {
    let dir = copy();
    edit(
        &schema(&dir),
        "    description TEXT,\n",
        "    description TEXT NOT NULL,\n",
    );
    let msg = load_err(&dir);
    assert_mentions(
        &msg,
        &[
            "table sessions, column description",
            "`description TEXT NOT NULL`",
            "`description TEXT`",
            "migrations/0014_session_description.sql",
        ],
    );
}

#[test]
fn a_different_foreign_key_names_it() {
    let dir = copy();
    edit(
        &schema(&dir),
        "    -- The session the firing created.\n    session_id TEXT REFERENCES sessions (id),",
        "    -- The session the firing created.\n    session_id TEXT,",
    );
    let msg = load_err(&dir);
    assert_mentions(
        &msg,
        &[
            "table trigger_firings, foreign key (session_id)",
            "(session_id) REFERENCES sessions (id)",
            "migrations/0002_triggers_and_firings.sql",
        ],
    );
}

#[test]
fn an_edited_shipped_migration_is_refused_by_the_lock() {
    let dir = copy();
    edit(
        &migration(&dir, "0003_trigger_cooldown.sql"),
        "cooldown_ms INTEGER",
        "cooldown_ms INTEGER DEFAULT 0",
    );
    let msg = load_err(&dir);
    assert_mentions(
        &msg,
        &[
            "migrations.lock",
            "0003_trigger_cooldown.sql changed after it shipped",
        ],
    );
}

#[test]
fn a_comment_or_whitespace_edit_of_a_shipped_migration_passes() {
    let dir = copy();
    edit(
        &migration(&dir, "0003_trigger_cooldown.sql"),
        "ALTER TABLE agent_triggers ADD COLUMN cooldown_ms INTEGER;",
        "-- Clarified comment.\nALTER TABLE   agent_triggers\n    ADD COLUMN cooldown_ms INTEGER; /* trailing */",
    );
    Project::load(dir.path()).unwrap();
}

#[test]
fn a_gap_in_numbering_is_refused() {
    let dir = copy();
    fs::remove_file(migration(&dir, "0005_session_title_source.sql")).unwrap();
    let msg = load_err(&dir);
    assert_mentions(
        &msg,
        &[
            "version 5 is missing",
            "0004_agent_drafts.sql",
            "0006_runs_and_journal.sql",
        ],
    );
}

#[test]
fn a_repeated_version_and_a_bad_name_are_refused() {
    let dir = copy();
    fs::write(migration(&dir, "0004_again.sql"), "SELECT 1;").unwrap();
    assert_mentions(&load_err(&dir), &["repeats version 4"]);

    let dir = copy();
    fs::write(migration(&dir, "30_late.sql"), "SELECT 1;").unwrap();
    assert_mentions(&load_err(&dir), &["30_late.sql", "NNNN_slug.sql"]);
}

#[test]
fn an_unlocked_new_migration_is_a_warning_not_an_error() {
    let dir = copy();
    let (version, name) = next("runs_by_model");
    fs::write(
        migration(&dir, &name),
        "CREATE INDEX runs_by_model ON runs (model);\n",
    )
    .unwrap();
    edit(
        &schema(&dir),
        "CREATE INDEX runs_by_account",
        "CREATE INDEX runs_by_model ON runs (model);\nCREATE INDEX runs_by_account",
    );
    let p = Project::load(dir.path()).unwrap();
    assert_eq!(p.latest_version(), version);
    assert_eq!(p.warnings.len(), 1);
    assert_mentions(&p.warnings[0], &[&format!("{name} is not locked yet")]);
}

#[test]
fn an_unknown_annotation_names_its_line() {
    let dir = copy();
    let text = fs::read_to_string(schema(&dir)).unwrap();
    let line = text
        .lines()
        .position(|l| l.contains("    content_format TEXT NOT NULL,"))
        .unwrap()
        + 1;
    edit(
        &schema(&dir),
        "    content_format TEXT NOT NULL,",
        "    -- @json\n    content_format TEXT NOT NULL,",
    );
    let msg = load_err(&dir);
    assert_mentions(
        &msg,
        &[
            &format!("schema.sql:{line}:"),
            "unknown annotation `@json`",
            "@enum(a, b, ...), @bool, @timestamp, @cbor(Type)",
        ],
    );
}

#[test]
fn misplaced_annotations_name_their_line() {
    // On a column of the wrong type.
    let dir = copy();
    edit(
        &schema(&dir),
        "    content_format TEXT NOT NULL,",
        "    -- @bool\n    content_format TEXT NOT NULL,",
    );
    assert_mentions(
        &load_err(&dir),
        &[
            "`@bool` is misplaced on agent_drafts.content_format",
            "declared TEXT",
        ],
    );
    // Above a table.
    let dir = copy();
    edit(
        &schema(&dir),
        "CREATE TABLE accounts (",
        "-- @timestamp\nCREATE TABLE accounts (",
    );
    assert_mentions(
        &load_err(&dir),
        &["`@timestamp` is misplaced", "above table accounts"],
    );
    // Above an index.
    let dir = copy();
    edit(
        &schema(&dir),
        "CREATE INDEX runs_by_root",
        "-- @bool\nCREATE INDEX runs_by_root",
    );
    assert_mentions(&load_err(&dir), &["on index runs_by_root"]);
    // Detached from any column.
    let dir = copy();
    edit(
        &schema(&dir),
        "CREATE TABLE accounts (",
        "-- @bool\n\nCREATE TABLE accounts (",
    );
    assert_mentions(&load_err(&dir), &["documents no column"]);
}

#[test]
fn a_cbor_column_without_its_payload_type_is_refused() {
    let dir = copy();
    edit(&schema(&dir), "    -- @cbor(WaitMatch)\n", "");
    assert_mentions(
        &load_err(&dir),
        &["run_event_waits.match_cbor holds CBOR but has no `@cbor(Type)`"],
    );
}

#[test]
fn sql_that_sqlite_rejects_names_file_statement_and_message() {
    let dir = copy();
    let (_, broken) = next("broken");
    fs::write(
        migration(&dir, &broken),
        "-- a typo\nCREATE INDEX runs_by_model ON runs (model);\nALTER TABLE run ADD COLUMN x TEXT;\n",
    )
    .unwrap();
    let msg = load_err(&dir);
    assert_mentions(
        &msg,
        &[
            &format!("{broken}:3: SQLite rejected this statement"),
            "ALTER TABLE run ADD COLUMN x TEXT",
            "no such table: run",
        ],
    );
    let dir = copy();
    let (_, typo) = next("typo");
    fs::write(migration(&dir, &typo), "CREATE INDEX ON runs (model);\n").unwrap();
    assert_mentions(&load_err(&dir), &[&format!("{typo}:1:"), "syntax error"]);
    let dir = copy();
    edit(
        &schema(&dir),
        "CREATE TABLE accounts (",
        "CREATE TABLE accounts (\n    id TEXT,",
    );
    assert_mentions(
        &load_err(&dir),
        &["schema.sql:", "duplicate column name: id"],
    );
}

#[test]
fn the_build_script_entry_point_fails_on_a_broken_directory() {
    let dir = copy();
    edit(
        &schema(&dir),
        "    description TEXT,\n",
        "    description TEXT,\n    mood TEXT,\n",
    );
    let out = tempfile::tempdir().unwrap();
    let err = Builder::new(dir.path())
        .out_dir(out.path())
        .cargo_directives(false)
        .run()
        .unwrap_err();
    assert!(matches!(err, Error::Drift { .. }));
    assert_mentions(&err.to_string(), &["table sessions, column mood"]);
    assert!(
        !out.path()
            .join(seed_agents_codegen::GENERATED_FILE)
            .exists(),
        "nothing is generated from a broken directory"
    );
}

#[test]
fn the_build_script_entry_point_writes_only_when_bytes_change() {
    let out = tempfile::tempdir().unwrap();
    let b = Builder::new(schema_dir())
        .out_dir(out.path())
        .cargo_directives(false);
    let first = b.run().unwrap();
    assert!(first.changed);
    let second = b.run().unwrap();
    assert!(
        !second.changed,
        "an identical second run leaves the file alone"
    );
}
