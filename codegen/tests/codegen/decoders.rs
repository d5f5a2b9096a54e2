//! Arbitrary text never panics the parsers of the project's own inputs: `migrations.lock`
//! (checked against the real migrations) and the annotations of `schema.sql` (parsed against
//! the structure SQLite builds from the real file). Inputs are the real files with a random
//! splice of annotation-like or arbitrary text, and arbitrary text alone. Only a panic fails;
//! the error for bad input is covered by the drift tests. Case counts are bounded.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use proptest::prelude::*;
use seed_agents_codegen::migration::{read_migrations, Migration};
use seed_agents_codegen::{annotations, lock, sql, Baseline};

const CASES: u32 = 512;

fn schema_dir() -> PathBuf {
    PathBuf::from(seed_agents_schema::DIR)
}

/// The real schema.sql and what SQLite builds from it.
fn baseline() -> &'static Baseline {
    static B: OnceLock<Baseline> = OnceLock::new();
    B.get_or_init(|| {
        let path = schema_dir().join("schema.sql");
        Baseline::from_sql(&path, std::fs::read_to_string(&path).unwrap()).unwrap()
    })
}

/// The real migrations and lock text.
fn migrations() -> &'static (Vec<Migration>, String) {
    static M: OnceLock<(Vec<Migration>, String)> = OnceLock::new();
    M.get_or_init(|| {
        let dir = schema_dir().join("migrations");
        let text = std::fs::read_to_string(dir.join(lock::LOCK_FILE)).unwrap();
        (read_migrations(&dir).unwrap(), text)
    })
}

/// Text that looks like what the parsers look for, or anything at all.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(vec![
            "-- @enum(",
            "-- @cbor(",
            "-- @bool",
            "-- @timestamp",
            "-- @",
            ")",
            "(",
            ",",
            "\n",
            "'",
            "\"",
            "--",
            "/*",
            "*/",
            ";",
            "CREATE TABLE x (",
            "CREATE INDEX ",
            " ON ",
            "0000_genesis ",
            "ab12",
            "#",
            " ",
            "\u{0}",
            "é",
            "@enum(a, b)",
            "@cbor(Ipld)",
        ])
        .prop_map(str::to_owned),
        ".{0,24}",
    ]
}

/// `base` with the bytes at a random char boundary range replaced by `insert`.
fn splice(base: &str, at: prop::sample::Index, len: usize, insert: &str) -> String {
    let mut start = at.index(base.len() + 1);
    while !base.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = (start + len).min(base.len());
    while !base.is_char_boundary(end) {
        end += 1;
    }
    format!("{}{insert}{}", &base[..start], &base[end..])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn spliced_schema_sql_never_panics_the_annotation_parser(
        at in any::<prop::sample::Index>(),
        len in 0usize..16,
        insert in proptest::collection::vec(fragment(), 1..4),
    ) {
        let b = baseline();
        let text = splice(&b.schema_sql, at, len, &insert.concat());
        let _ = sql::tokenize(&text);
        let _ = annotations::parse(&b.schema_path, &text, &b.fresh);
    }

    #[test]
    fn arbitrary_text_never_panics_the_annotation_parser(text in ".{0,200}") {
        let b = baseline();
        let _ = sql::tokenize(&text);
        let _ = annotations::parse(&b.schema_path, &text, &b.fresh);
    }

    #[test]
    fn spliced_or_arbitrary_lock_files_never_panic_the_lock_check(
        at in any::<prop::sample::Index>(),
        len in 0usize..80,
        insert in proptest::collection::vec(fragment(), 0..4),
        arbitrary in ".{0,200}",
    ) {
        let (migrations, text) = migrations();
        let path = Path::new(lock::LOCK_FILE);
        let spliced = splice(text, at, len, &insert.concat());
        let _ = lock::check(path, &spliced, migrations);
        let _ = lock::check(path, &arbitrary, migrations);
    }
}

#[test]
fn the_real_files_pass_so_the_splices_start_from_valid_input() {
    let (migrations, text) = migrations();
    lock::check(Path::new(lock::LOCK_FILE), text, migrations).unwrap();
    let b = baseline();
    annotations::parse(&b.schema_path, &b.schema_sql, &b.fresh).unwrap();
}
