//! `seed-agents-codegen`: maintenance commands on a schema directory (`schema.sql` and
//! `migrations/`). Built with the `cli` feature.
//!
//! `check [ROOT]` runs every build-time check (numbering, lock, replay, parity, annotations) and
//! prints the report the build would fail with. `lock [ROOT]` appends every migration that is not
//! yet in `migrations/migrations.lock`; it never rewrites a locked line, so an edited shipped
//! migration stays an error. Results go to stdout, warnings and errors to stderr.

use clap::{Parser, Subcommand};
use seed_agents_codegen::{lock, migration, Error};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Check and lock the schema directory of a seed-agents store.
#[derive(Parser)]
#[command(name = "seed-agents-codegen", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run every build-time check and print the report the build would fail with.
    Check {
        /// The schema directory, holding schema.sql and migrations/.
        #[arg(default_value = ".")]
        root: PathBuf,
    },
    /// Append every migration not yet in migrations/migrations.lock.
    Lock {
        /// The schema directory, holding schema.sql and migrations/.
        #[arg(default_value = ".")]
        root: PathBuf,
    },
}

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Lock { root } => {
            run_lock(&root).map(|n| println!("migrations.lock covers {n} migrations"))
        }
        Command::Check { root } => seed_agents_codegen::Project::load(&root).map(|p| {
            for w in &p.warnings {
                eprintln!("warning: {w}");
            }
            println!(
                "schema.sql equals genesis + {} migrations (version {})",
                p.migrations.len() - 1,
                p.latest_version()
            );
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run_lock(root: &Path) -> Result<usize, Error> {
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
