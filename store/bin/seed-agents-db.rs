//! `seed-agents-db`: open, inspect and document the Seed Agents database.
//!
//! Exit codes: 0 on success, 2 when the schema gate refuses the file (the reason on stderr), 1 on
//! any other error.

use clap::{Parser, Subcommand};
use seed_agents_store::{resolve_path, schema, status, Error, Outcome, Store, Verdict};
use std::path::PathBuf;
use std::process::ExitCode;

/// Open, inspect and document the Seed Agents database.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// The database file [default: $SEED_AGENTS_DB_PATH, else data/agents.sqlite].
    #[arg(long, global = true, value_name = "PATH")]
    db_path: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Create or migrate the database, then report its tables and row counts.
    Open,
    /// Report the claimed version, the structural check and pending migrations; never writes.
    Status,
    /// Write one Markdown page per table into DIR.
    Docs {
        /// The output directory.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let path = resolve_path(cli.db_path.as_deref());
    let result = match cli.command {
        Command::Open => open(path),
        Command::Status => show_status(path),
        Command::Docs { out } => docs(out),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            match e {
                Error::Refused { .. } => ExitCode::from(2),
                _ => ExitCode::from(1),
            }
        }
    }
}

fn open(path: PathBuf) -> Result<ExitCode, Error> {
    let store = Store::open(&path)?;
    println!("database: {}", store.path().display());
    let outcome = match store.outcome() {
        Outcome::Fresh { version } => format!("fresh install at version {version}"),
        Outcome::Migrated { from, to } => format!("migrated from version {from} to {to}"),
        Outcome::Current { version } => format!("current at version {version}"),
    };
    println!("outcome: {outcome}");
    println!("tables:");
    for (table, rows) in store.table_counts()? {
        println!("  {table:<28} {rows:>10}");
    }
    Ok(ExitCode::SUCCESS)
}

fn show_status(path: PathBuf) -> Result<ExitCode, Error> {
    let s = status(&path)?;
    println!("database: {}", s.path.display());
    println!("binary version: {}", s.supported);
    match s.verdict {
        Verdict::Missing => println!(
            "state: no file yet (open creates it at version {})",
            s.supported
        ),
        Verdict::Fresh => println!("state: empty (open installs version {})", s.supported),
        Verdict::Verified { version, pending } => {
            println!("claimed version: {version}");
            println!("structure: verified against version {version}");
            if pending.is_empty() {
                println!("pending migrations: none");
            } else {
                println!("pending migrations ({}):", pending.len());
                for m in pending {
                    println!("  {m}");
                }
            }
        }
        Verdict::Refused(reason) => {
            eprintln!(
                "refused: {reason}\nTo start from a fresh database, delete the database files (rm {}*) and restart.",
                s.path.display()
            );
            return Ok(ExitCode::from(2));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn docs(out: PathBuf) -> Result<ExitCode, Error> {
    let io = |source| Error::Io {
        path: out.clone(),
        source,
    };
    std::fs::create_dir_all(&out).map_err(io)?;
    for (name, text) in schema::DOCS {
        std::fs::write(out.join(name), text).map_err(|source| Error::Io {
            path: out.join(name),
            source,
        })?;
    }
    println!("wrote {} pages to {}", schema::DOCS.len(), out.display());
    Ok(ExitCode::SUCCESS)
}
