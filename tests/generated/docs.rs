//! The committed `docs/schema/*.md` pages are exactly what the build generates. To refresh them:
//! `cargo run --features cli --bin seed-agents-db -- docs --out docs/schema`.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

#[test]
fn committed_schema_docs_match_the_generated_ones() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/schema");
    let refresh =
        "refresh with `cargo run --features cli --bin seed-agents-db -- docs --out docs/schema`";
    let mut expected = BTreeSet::new();
    for (name, text) in seed_agents_store::schema::DOCS {
        expected.insert(name.to_string());
        let committed = fs::read_to_string(dir.join(name))
            .unwrap_or_else(|e| panic!("docs/schema/{name}: {e}; {refresh}"));
        assert!(
            committed == *text,
            "docs/schema/{name} differs from the generated page; {refresh}"
        );
    }
    let on_disk: BTreeSet<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let stale: Vec<_> = on_disk.difference(&expected).collect();
    assert!(
        stale.is_empty(),
        "pages no table generates: {stale:?}; delete them"
    );
    assert_eq!(
        seed_agents_store::schema::DOCS.len(),
        seed_agents_store::schema::TABLES.len() + 1
    );
}

/// Every relative link of a page reaches a file of the repository: the pages link the schema and
/// the migration that introduced each object, and a moved file must not leave them dangling.
#[test]
fn relative_links_of_the_pages_resolve() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/schema");
    let mut checked = 0;
    for (name, text) in seed_agents_store::schema::DOCS {
        for target in text
            .split("](")
            .skip(1)
            .filter_map(|rest| rest.split(')').next())
        {
            if target.starts_with("http") || !target.contains('/') {
                continue;
            }
            assert!(
                dir.join(target).exists(),
                "docs/schema/{name} links {target}, which does not exist"
            );
            checked += 1;
        }
    }
    assert!(checked > 50, "only {checked} relative links found");
}
