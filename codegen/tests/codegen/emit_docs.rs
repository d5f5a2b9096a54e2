//! The Markdown docs emitter against the real schema.sql and migrations/.

use seed_agents_codegen::annotations::ColumnKind;
use seed_agents_codegen::emit::docs;
use seed_agents_codegen::Project;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

fn project() -> &'static Project {
    static PROJECT: OnceLock<Project> = OnceLock::new();
    PROJECT.get_or_init(|| {
        let root = Path::new(seed_agents_schema::DIR);
        Project::load(root).expect("the real schema loads")
    })
}

fn pages() -> &'static BTreeMap<String, String> {
    static PAGES: OnceLock<BTreeMap<String, String>> = OnceLock::new();
    PAGES.get_or_init(|| docs::render(project()))
}

fn page(name: &str) -> &'static str {
    pages()
        .get(name)
        .unwrap_or_else(|| panic!("no page {name}"))
}

/// The row of the first Markdown table on `page` whose first cell is `` `name` ``.
fn table_row<'a>(page: &'a str, name: &str) -> &'a str {
    let start = format!("| `{name}` |");
    page.lines()
        .find(|l| l.starts_with(&start))
        .unwrap_or_else(|| panic!("no row for {name} in:\n{page}"))
}

/// The cells of a table row, split on unescaped `|`.
fn cells(row: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = row.trim().trim_start_matches('|').chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cur.push('|');
                chars.next();
            }
            '|' => out.push(std::mem::take(&mut cur).trim().to_string()),
            _ => cur.push(c),
        }
    }
    out
}

/// The lines of the section headed `## heading` on `page`.
fn section<'a>(page: &'a str, heading: &str) -> Vec<&'a str> {
    let head = format!("## {heading}");
    page.lines()
        .skip_while(|l| *l != head)
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn one_page_per_table_plus_the_index() {
    let mut expected: Vec<String> = project()
        .fresh
        .tables
        .keys()
        .map(|t| format!("{t}.md"))
        .collect();
    expected.push("README.md".into());
    expected.sort();
    let got: Vec<String> = pages().keys().cloned().collect();
    assert_eq!(got, expected);
}

#[test]
fn index_links_every_table_with_its_first_sentence() {
    let index = page("README.md");
    assert!(index.starts_with("# "), "{index}");
    assert!(index.contains("generated from [`schema.sql`]"), "{index}");
    assert!(index.contains("checked by a test"), "{index}");
    for table in project().fresh.tables.keys() {
        let link = format!("- [`{table}`]({table}.md)");
        assert_eq!(
            index.lines().filter(|l| l.starts_with(&link)).count(),
            1,
            "{table} in:\n{index}"
        );
    }
    assert!(
        index
            .contains("- [`server_config`](server_config.md): Server-local configuration blobs.\n"),
        "{index}"
    );
}

#[test]
fn every_page_has_the_header_and_a_clean_shape() {
    for (name, text) in pages() {
        assert!(
            text.ends_with('\n') && !text.ends_with("\n\n"),
            "{name} ends badly"
        );
        assert!(!text.contains('\r'), "{name} has a carriage return");
        for (i, line) in text.lines().enumerate() {
            assert_eq!(
                line,
                line.trim_end(),
                "{name}:{} has trailing spaces",
                i + 1
            );
        }
        if name == "README.md" {
            continue;
        }
        let table = name.strip_suffix(".md").unwrap();
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some(format!("# {table}").as_str()));
        assert_eq!(lines.next(), Some(docs::GENERATED));
        assert!(docs::GENERATED.contains("@generated"));
    }
}

#[test]
fn runs_page_shows_column_and_index_provenance() {
    let runs = page("runs.md");
    assert!(runs.contains("WITHOUT ROWID"), "{runs}");
    assert!(
        runs.contains(
            "Introduced in version 6 ([`migrations/0006_runs_and_journal.sql`](../../schema/migrations/0006_runs_and_journal.sql))"
        ),
        "{runs}"
    );

    let c = cells(table_row(runs, "parent_tool_call_id"));
    assert_eq!(c[1], "`TEXT`");
    assert_eq!(c[2], "NULL");
    assert_eq!(
        c[5],
        "[8](../../schema/migrations/0008_runs_parent_tool_call.sql)"
    );
    assert_eq!(c[6], "", "changed equals introduced, so it stays empty");
    assert_eq!(c[7], "The parent's delegate call that spawned this run.");

    let i = cells(table_row(runs, "runs_by_parent_tool_call"));
    assert_eq!(i[1], "`parent_run_id, parent_tool_call_id`");
    assert_eq!(i[2], "no");
    assert_eq!(
        i[4],
        "[28](../../schema/migrations/0028_runs_by_parent_tool_call.sql)"
    );

    let d = cells(table_row(runs, "runs_by_session"));
    assert_eq!(d[1], "`session_id, created_at DESC`");

    // Columns follow schema.sql, not name order.
    let order: Vec<&str> = section(runs, "Columns")
        .into_iter()
        .skip(2)
        .map(|l| l.split('`').nth(1).unwrap())
        .collect();
    let expected: Vec<&str> = project().fresh.tables["runs"]
        .ordered_columns()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(order, expected);
    assert_eq!(order[..3], ["id", "account_id", "root_run_id"]);

    let fks = section(runs, "Foreign keys");
    assert!(
        fks.contains(&"- `parent_run_id` -> [`runs`](runs.md) (`id`)"),
        "{fks:?}"
    );
    assert!(
        fks.contains(&"- `trigger_firing_id` -> [`trigger_firings`](trigger_firings.md) (`id`)"),
        "{fks:?}"
    );
}

#[test]
fn renamed_column_is_introduced_by_the_rename() {
    let page = page("account_authorizations.md");
    let c = cells(table_row(page, "signer_id"));
    assert_eq!(
        c[5],
        "[24](../../schema/migrations/0024_signer_capability.sql)"
    );
    assert_eq!(c[2], "NOT NULL");
    assert!(section(page, "Primary key").contains(&"`account_id, signer_id`"));
    // Genesis columns link to the genesis file.
    let a = cells(table_row(page, "account_id"));
    assert_eq!(a[5], "[0](../../schema/migrations/0000_genesis.sql)");
}

#[test]
fn accounts_lists_the_tables_that_reference_it() {
    let page = page("accounts.md");
    let refs = section(page, "Referenced by");
    assert!(
        refs.contains(&"- [`runs`](runs.md) (`account_id`) -> `id`"),
        "{refs:?}"
    );
    assert!(refs
        .iter()
        .any(|l| l.starts_with("- [`sessions`](sessions.md)")));
    assert_eq!(section(page, "Foreign keys"), ["None."]);
    // Every referencing foreign key of the model is listed.
    let n: usize = project()
        .fresh
        .tables
        .values()
        .map(|t| {
            t.foreign_keys
                .iter()
                .filter(|fk| fk.table == "accounts")
                .count()
        })
        .sum();
    assert_eq!(refs.len(), n);
}

#[test]
fn sessions_shows_annotations_and_defaults() {
    let page = page("sessions.md");
    let c = cells(table_row(page, "title_source"));
    assert_eq!(c[3], "`'system'`");
    assert_eq!(c[4], "`@enum(system, agent, user)`");
    assert!(page.contains("`@enum(system, agent, user)`"));
    let plan = cells(table_row(page, "plan_cbor"));
    assert_eq!(
        plan[4],
        "[`@cbor(RunPlan)`](https://docs.rs/seed-agents-store/latest/seed_agents_store/payload/?search=RunPlan)"
    );
    assert_eq!(plan[1], "`BLOB`");
}

#[test]
fn every_cbor_annotation_links_to_its_payload_type() {
    let mut seen = 0;
    for (table, doc) in &project().annotations.tables {
        let page = page(&format!("{table}.md"));
        for (column, c) in &doc.columns {
            let cell = &cells(table_row(page, column))[4];
            match &c.kind {
                Some(ColumnKind::Cbor(ty)) => {
                    seen += 1;
                    assert_eq!(
                        *cell,
                        format!("[`@cbor({ty})`]({}?search={ty})", docs::PAYLOAD_DOCS),
                        "{table}.{column}"
                    );
                }
                // Other annotations stay plain code spans.
                Some(kind) => assert_eq!(*cell, format!("`{}`", kind.describe())),
                None => assert_eq!(*cell, "", "{table}.{column}"),
            }
        }
    }
    let cbor_columns = project()
        .fresh
        .tables
        .values()
        .flat_map(|t| t.columns.keys())
        .filter(|c| c.ends_with("_cbor"))
        .count();
    assert_eq!(seen, cbor_columns, "every *_cbor column is linked");
}

/// The legend lines of `page`: the `## Annotations` section.
fn legend(page: &str) -> Vec<&str> {
    section(page, "Annotations")
}

#[test]
fn each_table_page_explains_exactly_the_annotations_it_uses() {
    let marker = |kind: &ColumnKind| match kind {
        ColumnKind::Timestamp => {
            "- `@timestamp`: an `INTEGER` of milliseconds since the Unix epoch."
        }
        ColumnKind::Bool => "- `@bool`: an `INTEGER` holding 0 (false) or 1 (true).",
        ColumnKind::Enum(_) => {
            "- `@enum(..)`: `TEXT` holding one of the listed values, a closed set."
        }
        ColumnKind::Cbor(_) => "- `@cbor(T)`: a `BLOB` holding the canonical DAG-CBOR encoding",
    };
    let all = [
        ColumnKind::Timestamp,
        ColumnKind::Bool,
        ColumnKind::Enum(vec![]),
        ColumnKind::Cbor(String::new()),
    ];
    for table in project().fresh.tables.keys() {
        let page = page(&format!("{table}.md"));
        let lines = legend(page);
        let used: Vec<&ColumnKind> = project().annotations.tables[table]
            .columns
            .values()
            .filter_map(|c| c.kind.as_ref())
            .collect();
        for kind in &all {
            let is_used = used
                .iter()
                .any(|u| std::mem::discriminant(*u) == std::mem::discriminant(kind));
            let listed = lines.iter().any(|l| l.starts_with(marker(kind)));
            assert_eq!(is_used, listed, "{table}: {} in {lines:?}", kind.describe());
        }
    }
    // A page with no annotation has no legend at all; one with every kind lists all four, in
    // the fixed order.
    assert!(!page("server_config.md").contains("## Annotations"));
    let agents = legend(page("agents.md"));
    assert_eq!(agents.len(), 4, "{agents:?}");
    assert!(agents[0].starts_with("- `@timestamp`") && agents[3].starts_with("- `@cbor(T)`"));
    assert!(agents[3].ends_with("the annotation links to `T`'s documentation."));
}

#[test]
fn the_index_page_explains_every_annotation() {
    let lines = legend(page("README.md"));
    let names: Vec<&str> = lines.iter().map(|l| l.split('`').nth(1).unwrap()).collect();
    assert_eq!(names, ["@timestamp", "@bool", "@enum(..)", "@cbor(T)"]);
}

#[test]
fn pipes_in_docs_are_escaped() {
    let page = page("secrets.md");
    let row = table_row(page, "ciphertext");
    assert!(
        row.contains("nonce \\|\\| encrypted bytes \\|\\| 16-byte tag"),
        "{row}"
    );
    assert_eq!(cells(row).len(), 8);
}

#[test]
fn angle_brackets_in_docs_do_not_become_html() {
    let page = page("trigger_firings.md");
    let row = table_row(page, "activity_key");
    assert!(
        row.contains("schedule:&lt;triggerId>:&lt;scheduledAt>"),
        "{row}"
    );
}

#[test]
fn rendering_is_deterministic() {
    let again = docs::render(project());
    assert_eq!(&again, pages());
    let reloaded = Project::load(Path::new(seed_agents_schema::DIR)).unwrap();
    assert_eq!(&docs::render(&reloaded), pages());
}
