//! The PostgreSQL side of the schema as the build derives and checks it: derived steps where no
//! data moves, a dialect file demanded (by path) where it does, and every statement parsed as
//! PostgreSQL. That the statements do what the model says is proved against a real server by the
//! store's `postgres_schema` tests.

use crate::common::{assert_mentions, copy, edit, migration, next, schema, schema_dir};
use seed_agents_codegen::postgres::{check_syntax, plan, render, Source, BASELINE};
use seed_agents_codegen::Project;
use std::fs;

#[test]
fn the_real_plan_derives_every_step_but_the_ones_that_move_data() {
    let project = Project::load(schema_dir()).unwrap();
    let plan = plan(&project).unwrap();
    check_syntax(&plan).unwrap();
    let sources: Vec<(u32, &Source)> = plan.steps.iter().map(|s| (s.version, &s.source)).collect();
    assert_eq!(sources[0], (BASELINE, &Source::Genesis));
    for (version, source) in &sources[1..] {
        match version {
            32 => assert!(
                matches!(source, Source::Dialect(p) if p.ends_with("postgres/0032_secret_keys.sql"))
            ),
            36 => assert!(matches!(source, Source::Dialect(p)
                if p.ends_with("postgres/0036_audit_chain_per_account.sql"))),
            _ => assert_eq!(*source, &Source::Derived, "version {version}"),
        }
    }
    assert_eq!(plan.steps.last().unwrap().version, project.latest_version());
    assert_eq!(
        plan.fingerprints.len() as u32,
        project.latest_version() - BASELINE + 1
    );
    assert_eq!(plan.fresh, render(&project.fresh).unwrap());
}

/// Adds migration `what` with `sql` to a copy, and the same change to its schema.sql.
fn extended(what: &str, sql: &str, anchor: &str, baseline_edit: &str) -> tempfile::TempDir {
    let dir = copy();
    let (_, name) = next(what);
    fs::write(migration(&dir, &name), sql).unwrap();
    edit(&schema(&dir), anchor, baseline_edit);
    dir
}

#[test]
fn a_new_nullable_column_and_a_new_index_are_derived() {
    let dir = extended(
        "runs_note",
        "ALTER TABLE runs ADD COLUMN note TEXT;\nCREATE INDEX runs_by_note ON runs (note DESC) WHERE note IS NOT NULL;\n",
        "CREATE INDEX runs_by_account",
        "CREATE INDEX runs_by_note ON runs (note DESC) WHERE note IS NOT NULL;\nCREATE INDEX runs_by_account",
    );
    edit(
        &schema(&dir),
        "    queue TEXT NOT NULL DEFAULT 'background',",
        "    queue TEXT NOT NULL DEFAULT 'background',\n    -- A note.\n    note TEXT,",
    );
    let project = Project::load(dir.path()).unwrap();
    let plan = plan(&project).unwrap();
    let step = plan.steps.last().unwrap();
    assert_eq!(step.source, Source::Derived);
    assert_eq!(
        step.statements,
        vec![
            "ALTER TABLE runs ADD COLUMN note text COLLATE \"C\"".to_string(),
            "CREATE INDEX runs_by_note ON runs (note DESC NULLS LAST, id) WHERE note is not null"
                .to_string(),
        ]
    );
}

#[test]
fn a_new_not_null_column_with_a_default_is_derived() {
    let dir = extended(
        "runs_weight",
        "ALTER TABLE runs ADD COLUMN weight INTEGER NOT NULL DEFAULT 0;\n",
        "    queue TEXT NOT NULL DEFAULT 'background',",
        "    queue TEXT NOT NULL DEFAULT 'background',\n    -- A weight.\n    weight INTEGER NOT NULL DEFAULT 0,",
    );
    let project = Project::load(dir.path()).unwrap();
    assert_eq!(
        plan(&project).unwrap().steps.last().unwrap().statements,
        vec!["ALTER TABLE runs ADD COLUMN weight bigint NOT NULL DEFAULT 0".to_string()]
    );
}

#[test]
fn a_column_without_a_default_needs_a_dialect_file_and_takes_it() {
    let dir = copy();
    let (_, file) = next("policy_owner");
    let stem = file.trim_end_matches(".sql").to_string();
    // SQLite moves the data by rebuilding the table; PostgreSQL's side cannot be derived.
    fs::write(
        migration(&dir, &file),
        "CREATE TABLE retention_policies_new (kind TEXT PRIMARY KEY, max_age_ms INTEGER NOT NULL, \
         keep_count INTEGER, updated_at INTEGER NOT NULL, owner TEXT NOT NULL) WITHOUT ROWID;\n\
         INSERT INTO retention_policies_new SELECT kind, max_age_ms, keep_count, updated_at, 'store' FROM retention_policies;\n\
         DROP TABLE retention_policies;\n\
         ALTER TABLE retention_policies_new RENAME TO retention_policies;\n",
    )
    .unwrap();
    edit(
        &schema(&dir),
        "    keep_count INTEGER,",
        "    keep_count INTEGER,\n    -- Who set it.\n    owner TEXT NOT NULL,",
    );
    let project = Project::load(dir.path()).unwrap();
    let err = plan(&project).unwrap_err().to_string();
    assert_mentions(
        &err,
        &[
            &stem,
            "retention_policies.owner",
            "NOT NULL and without a default",
            &format!("postgres/{stem}.sql"),
        ],
    );

    fs::write(
        dir.path().join("postgres").join(&file),
        "ALTER TABLE retention_policies ADD COLUMN owner text;\n\
         UPDATE retention_policies SET owner = 'store';\n\
         ALTER TABLE retention_policies ALTER COLUMN owner SET NOT NULL;\n",
    )
    .unwrap();
    let plan = plan(&project).unwrap();
    let step = plan.steps.last().unwrap();
    assert!(matches!(&step.source, Source::Dialect(p) if p.ends_with(&file)));
    assert_eq!(step.statements.len(), 3);
    check_syntax(&plan).unwrap();

    // A typo in the dialect file fails the build's syntax check, naming the file.
    fs::write(
        dir.path().join("postgres").join(&file),
        "ALTER TABLE retention_policies ADD COLUMN owner text;\nUPDAT retention_policies SET owner = 'store';\n",
    )
    .unwrap();
    let project = Project::load(dir.path()).unwrap();
    let err = check_syntax(&seed_agents_codegen::postgres::plan(&project).unwrap())
        .unwrap_err()
        .to_string();
    assert_mentions(&err, &[&file, "UPDAT retention_policies"]);
}

#[test]
fn a_dialect_file_naming_no_later_migration_is_refused() {
    let dir = copy();
    fs::write(
        dir.path().join("postgres/0012_agent_collaborators.sql"),
        "SELECT 1;\n",
    )
    .unwrap();
    let project = Project::load(dir.path()).unwrap();
    let err = plan(&project).unwrap_err().to_string();
    assert_mentions(&err, &["0012_agent_collaborators.sql", "after version 29"]);
}
