//! Checks schema.sql against genesis + migrations in SQLite and generates the typed schema module
//! into `OUT_DIR`. Any drift fails the build with a report naming the object and the migration; an
//! undocumented table, column or index is a warning, or an error in CI (see the README's "Adding a
//! migration").

fn main() {
    // The schema lives in its own crate so that this package and the macros share one copy.
    if let Err(e) = seed_agents_codegen::Builder::new(seed_agents_schema::DIR)
        // Rows are written only through the store's operations, which keep the invariants
        // that span rows; reads stay public.
        .write_helpers(seed_agents_codegen::emit::rust::WriteHelpers::Crate)
        // Rows and enums get serde impls behind this crate's own off-by-default `serde` feature,
        // so the generated text is the same whatever features a build turns on.
        .serde_feature(Some("serde"))
        .run()
    {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
