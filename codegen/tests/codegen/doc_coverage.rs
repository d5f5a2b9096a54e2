//! Every table, column and index of schema.sql carries a doc comment: the build warns about each
//! one that does not, and refuses it when strict (`SEED_AGENTS_STRICT_DOCS=1`, or `CI=true`).

use seed_agents_codegen::coverage::{self, Object};
use seed_agents_codegen::{Builder, Error, Project};
use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;

fn schema_dir() -> PathBuf {
    PathBuf::from(seed_agents_schema::DIR)
}

/// A fixture schema directory: `schema.sql` as given, and a genesis equal to it.
fn fixture(schema: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("schema.sql"), schema).unwrap();
    fs::create_dir(dir.path().join("migrations")).unwrap();
    fs::write(
        dir.path().join("migrations").join("0000_genesis.sql"),
        schema,
    )
    .unwrap();
    fs::write(
        dir.path().join("migrations").join("migrations.lock"),
        seed_agents_codegen::lock::render(
            &seed_agents_codegen::migration::read_migrations(&dir.path().join("migrations"))
                .unwrap(),
        ),
    )
    .unwrap();
    dir
}

/// One documented column, one column with only an annotation, one bare column, a documented and
/// an undocumented index.
const PARTLY_DOCUMENTED: &str = "\
-- Things.
CREATE TABLE things (
    -- The thing's id.
    id TEXT PRIMARY KEY,
    -- @timestamp
    created_at INTEGER NOT NULL,
    label TEXT, -- What people call it.
    colour TEXT
) WITHOUT ROWID;

-- Listing by label.
CREATE INDEX things_by_label ON things (label);
CREATE INDEX things_by_colour ON things (colour);
";

fn build(
    dir: &tempfile::TempDir,
    out: &tempfile::TempDir,
    strict: bool,
) -> Result<seed_agents_codegen::Output, Error> {
    Builder::new(dir.path())
        .out_dir(out.path())
        .cargo_directives(false)
        .strict_docs(strict)
        .run()
}

#[test]
fn gaps_name_every_undocumented_column_and_index_with_its_line() {
    let dir = fixture(PARTLY_DOCUMENTED);
    let p = Project::load(dir.path()).unwrap();
    let gaps: Vec<(usize, Object)> = coverage::gaps(&p.fresh, &p.annotations)
        .into_iter()
        .map(|g| (g.line, g.object))
        .collect();
    assert_eq!(
        gaps,
        vec![
            (6, Object::Column("created_at".into())),
            (8, Object::Column("colour".into())),
            (13, Object::Index("things_by_colour".into())),
        ],
        "an annotation alone is not a description; a trailing comment is"
    );
}

#[test]
fn an_undocumented_table_is_a_gap() {
    let dir = fixture("CREATE TABLE bare (\n    -- Its key.\n    k TEXT PRIMARY KEY\n);\n");
    let p = Project::load(dir.path()).unwrap();
    let gaps = coverage::gaps(&p.fresh, &p.annotations);
    assert_eq!(gaps.len(), 1, "{gaps:?}");
    assert_eq!(gaps[0].object, Object::Table);
    assert_eq!(gaps[0].to_string(), "table bare has no doc comment");
}

#[test]
fn by_default_undocumented_objects_are_warnings_naming_their_line() {
    let dir = fixture(PARTLY_DOCUMENTED);
    let out_dir = tempfile::tempdir().unwrap();
    let out = build(&dir, &out_dir, false).expect("warnings do not fail the build");
    let schema = dir.path().join("schema.sql");
    let expected = [
        format!(
            "{}:6: column things.created_at has no doc comment",
            schema.display()
        ),
        format!(
            "{}:8: column things.colour has no doc comment",
            schema.display()
        ),
        format!(
            "{}:13: index things_by_colour on things has no doc comment (say which query it serves)",
            schema.display()
        ),
    ];
    assert_eq!(out.project.warnings, expected);
    assert!(out.path.exists(), "the module is still generated");
}

#[test]
fn when_strict_undocumented_objects_fail_the_build_and_nothing_is_written() {
    let dir = fixture(PARTLY_DOCUMENTED);
    let out = tempfile::tempdir().unwrap();
    let err = build(&dir, &out, true).unwrap_err();
    let Error::Undocumented { count, .. } = &err else {
        panic!("expected Error::Undocumented, got {err}");
    };
    assert_eq!(*count, 3);
    let msg = err.to_string();
    for part in [
        "schema.sql: 3 undocumented table(s), column(s) or index(es)",
        "Builder::strict_docs(true)",
        "schema.sql:6: column things.created_at",
        "schema.sql:8: column things.colour",
        "schema.sql:13: index things_by_colour",
    ] {
        assert!(msg.contains(part), "message lacks {part:?}:\n{msg}");
    }
    assert!(!msg.contains("things.label"), "{msg}");
    assert!(
        !out.path()
            .join(seed_agents_codegen::GENERATED_FILE)
            .exists(),
        "a refused build writes nothing"
    );
}

#[test]
fn a_fully_documented_schema_passes_when_strict() {
    let documented = PARTLY_DOCUMENTED
        .replace(
            "    -- @timestamp\n",
            "    -- When it was made.\n    -- @timestamp\n",
        )
        .replace("    colour TEXT\n", "    colour TEXT -- Its colour.\n")
        .replace(
            "CREATE INDEX things_by_colour",
            "-- Listing by colour.\nCREATE INDEX things_by_colour",
        );
    let dir = fixture(&documented);
    let out_dir = tempfile::tempdir().unwrap();
    let out = build(&dir, &out_dir, true).expect("nothing is undocumented");
    assert!(
        out.project.warnings.is_empty(),
        "{:?}",
        out.project.warnings
    );
}

fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
    let map: BTreeMap<&str, &str> = vars.iter().copied().collect();
    move |k| map.get(k).map(|v| v.to_string())
}

#[test]
fn strictness_comes_from_the_dedicated_variable_then_ci() {
    let strict = |vars: &[(&str, &str)]| coverage::strict_from_env(env(vars)).unwrap();
    assert_eq!(strict(&[]), None, "a developer build only warns");
    assert_eq!(strict(&[("CI", "true")]), Some("CI=true".into()));
    assert_eq!(strict(&[("CI", "TRUE")]), Some("CI=TRUE".into()));
    assert_eq!(strict(&[("CI", "false")]), None);
    assert_eq!(
        strict(&[("CI", "1")]),
        None,
        "only CI=true, as CI services set it"
    );
    assert_eq!(
        strict(&[("SEED_AGENTS_STRICT_DOCS", "1")]),
        Some("SEED_AGENTS_STRICT_DOCS=1".into())
    );
    assert_eq!(
        strict(&[("SEED_AGENTS_STRICT_DOCS", "0"), ("CI", "true")]),
        None,
        "the dedicated variable wins over CI"
    );
    assert_eq!(
        strict(&[("SEED_AGENTS_STRICT_DOCS", ""), ("CI", "true")]),
        Some("CI=true".into()),
        "an empty variable counts as unset"
    );
}

#[test]
fn a_strictness_value_that_is_not_understood_is_an_error_naming_it() {
    let err = coverage::strict_from_env(env(&[("SEED_AGENTS_STRICT_DOCS", "yes")])).unwrap_err();
    assert!(matches!(err, Error::Env { .. }));
    let msg = err.to_string();
    assert!(
        msg.contains("SEED_AGENTS_STRICT_DOCS=\"yes\"") && msg.contains("1 or 0"),
        "{msg}"
    );
}

#[test]
fn the_real_schema_documents_every_table_column_and_index() {
    let p = Project::load(schema_dir()).unwrap();
    let gaps = coverage::gaps(&p.fresh, &p.annotations);
    let listed: Vec<String> = gaps.iter().map(|g| format!("{}: {g}", g.line)).collect();
    assert!(
        gaps.is_empty(),
        "{} undocumented objects in schema.sql:\n{}",
        gaps.len(),
        listed.join("\n")
    );
}
