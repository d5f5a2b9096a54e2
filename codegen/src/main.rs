//! `seed-agents-codegen`: maintenance commands that write into the schema directory.
//!
//! `seed-agents-codegen check [ROOT]` runs every build-time check (numbering, lock, replay,
//! parity, annotations) and prints the report the build would fail with.
//!
//! `seed-agents-codegen lock [ROOT]` appends every migration that is not yet in
//! `migrations/migrations.lock` (ROOT defaults to the current directory). It never rewrites a
//! locked line: an edited shipped migration stays an error.

use seed_agents_codegen::{lock, migration, Error};
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("lock") => {
            let root = args
                .get(1)
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("."));
            match run_lock(&root) {
                Ok(n) => {
                    println!("migrations.lock covers {n} migrations");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Some("check") => {
            let root = args
                .get(1)
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("."));
            match seed_agents_codegen::Project::load(&root) {
                Ok(p) => {
                    for w in &p.warnings {
                        eprintln!("warning: {w}");
                    }
                    println!(
                        "schema.sql equals genesis + {} migrations (version {})",
                        p.migrations.len() - 1,
                        p.latest_version()
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        _ => {
            eprintln!("usage: seed-agents-codegen check|lock [ROOT]");
            ExitCode::from(2)
        }
    }
}

fn run_lock(root: &std::path::Path) -> Result<usize, Error> {
    let dir = root.join("migrations");
    let migrations = migration::read_migrations(&dir)?;
    let path = dir.join(lock::LOCK_FILE);
    let existing = std::fs::read_to_string(&path).unwrap_or_default();
    match lock::check(&path, &existing, &migrations) {
        Ok(()) => {}
        Err(Error::NotLocked { .. }) => {}
        Err(e) => return Err(e),
    }
    std::fs::write(&path, lock::render(&migrations))
        .map_err(|source| Error::Io { path, source })?;
    Ok(migrations.len())
}
