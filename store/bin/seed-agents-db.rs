//! `seed-agents-db`: open, inspect, check and document the Seed Agents database.
//!
//! Exit codes (also in `--help` and the README): 0 success, 1 an error (busy, disk full,
//! read-only, permission, I/O, ...; the file was not judged), 2 a usage error (clap), 3 the
//! schema gate refuses the file, 4 `check` found problems. Output goes through `writeln!`, so a
//! closed pipe (`open | head -1`) ends the program quietly instead of panicking.

use clap::{Parser, Subcommand};
use seed_agents_store::{
    integrity, resolve_path, schema, status, Error, ErrorKind, Outcome, Store, Verdict,
};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const EXIT_ERROR: u8 = 1;
const EXIT_REFUSED: u8 = 3;
const EXIT_PROBLEMS: u8 = 4;

const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  error: trouble with the path or the medium (busy, disk full, read-only, permission, I/O);
     the message names the cause and the path, and the file was not judged
  2  usage error
  3  refused: the schema gate refuses the file (not a database, unknown or newer version,
     damaged, structure differs); the file was left unchanged
  4  check found problems";

/// `--version`: the binary's version and the schema version it installs and migrates to.
static VERSION: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "{} (schema version {})",
        env!("CARGO_PKG_VERSION"),
        schema::SCHEMA_VERSION
    )
});

/// Open, inspect, check and document the Seed Agents database.
#[derive(Parser)]
#[command(name = "seed-agents-db", version = VERSION.as_str(), about, after_help = EXIT_CODES)]
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
    /// Run integrity_check, foreign_key_check and the structural comparison; never writes.
    Check,
    /// Write one Markdown page per table into DIR.
    Docs {
        /// The output directory.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
}

/// Why a command stopped.
enum Failure {
    Store(Error),
    /// Writing the report failed (a closed pipe is not one: it ends the program quietly).
    Output(io::Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure::Store(e)
    }
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Failure {
        Failure::Output(e)
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let path = resolve_path(cli.db_path.as_deref());
    let out = &mut io::stdout().lock();
    let result = match cli.command {
        Command::Open => open(out, &path),
        Command::Status => show_status(out, &path),
        Command::Check => show_check(out, &path),
        Command::Docs { out: dir } => docs(out, &dir),
    };
    match result {
        Ok(code) => code,
        Err(Failure::Output(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(Failure::Output(e)) => {
            eprintln!("error: writing the report: {e}");
            ExitCode::from(EXIT_ERROR)
        }
        Err(Failure::Store(e)) => {
            eprintln!("error: {e}");
            ExitCode::from(match e.kind() {
                ErrorKind::Refused => EXIT_REFUSED,
                _ => EXIT_ERROR,
            })
        }
    }
}

fn open(out: &mut impl Write, path: &Path) -> Result<ExitCode, Failure> {
    let store = Store::open(path)?;
    writeln!(out, "database: {}", store.path().display())?;
    let outcome = match store.outcome() {
        Outcome::Fresh { version } => format!("fresh install at version {version}"),
        Outcome::Migrated { from, to } => format!("migrated from version {from} to {to}"),
        Outcome::Current { version } => format!("current at version {version}"),
    };
    writeln!(out, "outcome: {outcome}")?;
    writeln!(out, "tables:")?;
    for (table, rows) in store.table_counts()? {
        writeln!(out, "  {table:<28} {rows:>10}")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints the gate's verdict; returns whether the gate refused the file.
fn verdict(out: &mut impl Write, path: &Path, v: &Verdict, supported: u32) -> io::Result<bool> {
    match v {
        Verdict::Missing => writeln!(
            out,
            "state: no file yet (open creates it at version {supported})"
        )?,
        Verdict::Fresh => writeln!(out, "state: empty (open installs version {supported})")?,
        Verdict::Verified { version, pending } => {
            writeln!(out, "claimed version: {version}")?;
            writeln!(out, "structure: verified against version {version}")?;
            if pending.is_empty() {
                writeln!(out, "pending migrations: none")?;
            } else {
                writeln!(out, "pending migrations ({}):", pending.len())?;
                for m in pending {
                    writeln!(out, "  {m}")?;
                }
            }
        }
        Verdict::Refused(reason) => {
            eprintln!(
                "refused: {}: {reason}\n{}",
                path.display(),
                reason.advice(path)
            );
            return Ok(true);
        }
    }
    Ok(false)
}

fn show_status(out: &mut impl Write, path: &Path) -> Result<ExitCode, Failure> {
    let s = status(path)?;
    writeln!(out, "database: {}", s.path.display())?;
    writeln!(out, "binary version: {}", s.supported)?;
    if verdict(out, path, &s.verdict, s.supported)? {
        return Ok(ExitCode::from(EXIT_REFUSED));
    }
    Ok(ExitCode::SUCCESS)
}

fn show_check(out: &mut impl Write, path: &Path) -> Result<ExitCode, Failure> {
    let r = integrity::check(path)?;
    writeln!(out, "database: {}", r.path.display())?;
    verdict(out, path, &r.verdict, schema::SCHEMA_VERSION)?;
    for (name, found) in [
        ("integrity_check", &r.integrity),
        ("foreign_key_check", &r.foreign_keys),
    ] {
        if found.is_empty() {
            writeln!(out, "{name}: ok")?;
        } else {
            writeln!(out, "{name}: {} problem(s)", found.len())?;
            for line in found {
                writeln!(out, "  {line}")?;
            }
        }
    }
    if r.is_clean() {
        writeln!(out, "result: no problems found")?;
        Ok(ExitCode::SUCCESS)
    } else {
        writeln!(out, "result: problems found")?;
        Ok(ExitCode::from(EXIT_PROBLEMS))
    }
}

fn docs(out: &mut impl Write, dir: &Path) -> Result<ExitCode, Failure> {
    std::fs::create_dir_all(dir).map_err(|e| Error::from_io(e, dir))?;
    for (name, text) in schema::DOCS {
        let page = dir.join(name);
        std::fs::write(&page, text).map_err(|e| Error::from_io(e, &page))?;
    }
    writeln!(
        out,
        "wrote {} pages to {}",
        schema::DOCS.len(),
        dir.display()
    )?;
    Ok(ExitCode::SUCCESS)
}
