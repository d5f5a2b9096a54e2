//! The schema of `seed-agents-store` as data, and nothing else: `schema.sql`, the fresh-install
//! baseline at the newest version, and `migrations/`, the ordered history from the frozen genesis
//! (version 0), with `migrations/migrations.lock`, and `postgres/`, the PostgreSQL side of the
//! migrations after version 29 that move data (every other PostgreSQL step is derived from the
//! model).
//!
//! This crate is the one place those files live. Everything that reads them depends on it, so a
//! published package carries them without a second copy that could drift: the store's build
//! script replays them from [`DIR`] (checking parity and generating the typed schema), and the
//! query macros check statements against [`SCHEMA_SQL`].

/// `schema.sql` as written: the fresh-install baseline at the newest version.
pub const SCHEMA_SQL: &str = include_str!("schema.sql");

/// The directory holding `schema.sql` and `migrations/`, on the machine that compiled this crate.
///
/// For build scripts and maintenance tools, which run where the sources are: pass it to
/// `seed_agents_codegen::Builder::new`. A program shipped elsewhere must not read files from it.
pub const DIR: &str = env!("CARGO_MANIFEST_DIR");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dir_holds_the_baseline_it_embeds() {
        let on_disk =
            std::fs::read_to_string(std::path::Path::new(DIR).join("schema.sql")).unwrap();
        assert_eq!(on_disk, SCHEMA_SQL);
        assert!(std::path::Path::new(DIR)
            .join("migrations/0000_genesis.sql")
            .is_file());
    }
}
