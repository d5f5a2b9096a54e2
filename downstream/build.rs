//! Declares this crate's own tables: the `prefs` extension in `db/` (its schema.sql, migrations/
//! and lock), checked on top of the store's newest schema. Drift between schema.sql and the
//! migrations, or a statement that touches a store table, fails this build naming the object and
//! the migration; otherwise `$OUT_DIR/prefs.rs` gets the extension's rows, helpers, docs,
//! `EXTENSION` and its checked `query!`.

fn main() {
    let db = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("db");
    if let Err(e) = seed_agents_codegen::Builder::new(db)
        .extension("prefs", seed_agents_schema::DIR)
        .run()
    {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
