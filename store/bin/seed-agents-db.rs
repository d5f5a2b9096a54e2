//! `seed-agents-db`: open, inspect, check, document and prune the Seed Agents database (built
//! with the `cli` feature).
//!
//! Results go to stdout, as text or, with `--json`, as one JSON document; errors, refusals and
//! progress go to stderr (with `--json`, an error is a JSON document there too). Progress of a
//! migration is drawn only when stderr is a terminal. Exit codes (also in `--help` and the
//! README): 0 success, 1 an error (busy, disk full, read-only, permission, I/O, ...; the file was
//! not judged), 2 a usage error (clap), 3 the schema gate refuses the file, 4 `check` or `audit
//! verify` found problems. Output goes through `writeln!`, so a closed pipe (`open | head -1`)
//! ends the program quietly instead of panicking.

mod audit;
mod keys;
mod maintenance;
mod postgres;
mod report;

use clap::{Parser, Subcommand};
use report::Format;
use seed_agents_store::prune::{PruneOptions, DEFAULT_BATCH_ROWS};
use seed_agents_store::retention::{Kind, RetentionPolicy};
use seed_agents_store::{resolve_path, schema, Error, ErrorKind};
use std::io::{self, IsTerminal};
use std::path::PathBuf;
use std::process::ExitCode;

const EXIT_ERROR: u8 = 1;
pub(crate) const EXIT_REFUSED: u8 = 3;
pub(crate) const EXIT_PROBLEMS: u8 = 4;

const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  error: trouble with the path or the medium (busy, disk full, read-only, permission, I/O);
     the message names the cause and the path, and the file was not judged
  2  usage error
  3  refused: the schema gate refuses the file (not a database, unknown or newer version,
     damaged, structure differs); the file was left unchanged
  4  check or audit verify found problems";

/// `--version`: the binary's version and the schema version it installs and migrates to.
static VERSION: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "{} (schema version {})",
        env!("CARGO_PKG_VERSION"),
        schema::SCHEMA_VERSION
    )
});

/// Open, inspect, check, document and prune the Seed Agents database.
#[derive(Parser)]
#[command(name = "seed-agents-db", version = VERSION.as_str(), about, after_help = EXIT_CODES)]
struct Cli {
    /// The database file [default: $SEED_AGENTS_DB_PATH, else data/agents.sqlite].
    #[arg(long, global = true, value_name = "PATH")]
    db_path: Option<PathBuf>,
    /// A PostgreSQL database instead of a SQLite file (`postgres://user:password@host/db`);
    /// `open`, `prune`, `retention`, `audit`, `rotate-key` and `move-key` run on it.
    #[arg(
        long,
        global = true,
        value_name = "URL",
        env = "SEED_AGENTS_DB_URL",
        conflicts_with = "db_path"
    )]
    db_url: Option<String>,
    /// Print the result as one JSON document (errors too, on stderr).
    #[arg(long, global = true)]
    json: bool,
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
    /// Verify or read the audit log; never writes.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// Rotate the secret encryption key: a new key, every encrypted value re-encrypted in
    /// batches, the old key retired. Run it again to resume an interrupted rotation.
    RotateKey {
        /// Where the keys live: database (the default), env:NAME, file:PATH or
        /// command:PROGRAM ARGS... (with an external provider, its first key is the new one).
        #[arg(long, value_name = "SPEC")]
        key_provider: Option<String>,
        /// Rows re-encrypted per write.
        #[arg(long, value_name = "N", default_value_t = seed_agents_store::keys::DEFAULT_ROTATION_BATCH)]
        batch_rows: usize,
    },
    /// Move the secret encryption key out of the database (and its free pages) to env:NAME,
    /// file:PATH (created with mode 600 when missing) or command:PROGRAM ARGS..., which must
    /// serve the same key.
    MoveKey {
        /// The provider that will hold the key.
        #[arg(long, value_name = "SPEC")]
        to: String,
    },
    /// Apply the retention policies: remove old rows in short batches and report, per table,
    /// what went. Without a policy nothing is removed.
    Prune {
        /// Count what would be removed, per table, and remove nothing.
        #[arg(long)]
        dry_run: bool,
        /// The most rows one batch (one short write transaction) removes.
        #[arg(long, value_name = "N", default_value_t = DEFAULT_BATCH_ROWS)]
        batch_rows: usize,
        /// Stop after N batches; a later prune removes the rest.
        #[arg(long, value_name = "N")]
        max_batches: Option<u64>,
    },
    /// Show or change the retention policies (off for every kind until set).
    #[command(subcommand)]
    Retention(Retention),
    /// Copy a whole SQLite store into an empty PostgreSQL database, verifying every table's
    /// row count and checksum: every row arrives or none does.
    Copy {
        /// The SQLite file to read (never written; a file behind this binary's version is
        /// copied from a migrated snapshot in the temporary directory).
        #[arg(long, value_name = "PATH")]
        from: PathBuf,
        /// The PostgreSQL database to fill (`postgres://user:password@host:port/dbname`); it
        /// must hold no rows.
        #[arg(long, value_name = "URL", env = "SEED_AGENTS_DB_URL")]
        to: String,
    },
}

/// The retention policies, one per kind: session_events, runs, run_journal, action_idempotency.
#[derive(Subcommand)]
enum Retention {
    /// Show every kind's policy.
    Show,
    /// Set a kind's policy: prune its rows once older than --max-age.
    Set {
        /// session_events, runs, run_journal or action_idempotency.
        #[arg(value_parser = maintenance::parse_kind)]
        kind: Kind,
        /// How old a row must be to go, as a number and a unit: 30d, 12h, 90m, 45s, 500ms.
        #[arg(long, value_name = "AGE", value_parser = maintenance::parse_age)]
        max_age: i64,
        /// session_events only: how many of an old session's newest events stay (default 1).
        #[arg(long, value_name = "N")]
        keep: Option<i64>,
    },
    /// Remove a kind's policy: its rows are kept forever again.
    Clear {
        /// session_events, runs, run_journal or action_idempotency.
        #[arg(value_parser = maintenance::parse_kind)]
        kind: Kind,
    },
}

#[derive(Subcommand)]
enum AuditCommand {
    /// Walk the hash chain: report edited, deleted, reordered or truncated rows by seq (exit 4).
    Verify,
    /// One page of events, newest first, and the token of the next page.
    List(audit::ListArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let path = match &cli.db_url {
        Some(url) => PathBuf::from(url),
        None => resolve_path(cli.db_path.as_deref()),
    };
    let format = if cli.json { Format::Json } else { Format::Text };
    let out = &mut io::stdout().lock();
    let result = match cli.command {
        Command::Open => report::open(out, &path, format, io::stderr().is_terminal()),
        Command::Status | Command::Check if cli.db_url.is_some() => {
            postgres::status(out, &path.to_string_lossy(), format)
        }
        Command::Status => report::status(out, &path, format),
        Command::Check => report::check(out, &path, format),
        Command::Docs { out: dir } => report::docs(out, &dir),
        Command::Audit(AuditCommand::Verify) => audit::verify(out, &path, format),
        Command::Audit(AuditCommand::List(args)) => audit::list(out, &path, format, args),
        Command::RotateKey {
            key_provider,
            batch_rows,
        } => keys::rotate(out, &path, format, key_provider.as_deref(), batch_rows),
        Command::MoveKey { to } => keys::move_out(out, &path, format, &to),
        Command::Prune {
            dry_run,
            batch_rows,
            max_batches,
        } => maintenance::prune(
            out,
            &path,
            format,
            PruneOptions {
                dry_run,
                batch_rows,
                max_batches,
            },
        ),
        Command::Retention(Retention::Show) => maintenance::show(out, &path, format),
        Command::Retention(Retention::Set {
            kind,
            max_age,
            keep,
        }) => maintenance::set(
            out,
            &path,
            format,
            kind,
            RetentionPolicy {
                max_age_ms: max_age,
                keep_count: keep,
            },
        ),
        Command::Retention(Retention::Clear { kind }) => {
            maintenance::clear(out, &path, format, kind)
        }
        Command::Copy { from, to } => postgres::copy(out, &from, &to, format),
    };
    match result {
        Ok(code) => code,
        Err(report::Failure::Output(e)) if e.kind() == io::ErrorKind::BrokenPipe => {
            ExitCode::SUCCESS
        }
        Err(report::Failure::Output(e)) => {
            eprintln!("error: writing the report: {e}");
            ExitCode::from(EXIT_ERROR)
        }
        Err(report::Failure::Store(e)) => {
            match format {
                Format::Text => eprintln!("error: {e}"),
                Format::Json => eprintln!("{}", report::error_json(&e)),
            }
            ExitCode::from(exit_code(&e))
        }
    }
}

/// The exit code of a failed command.
fn exit_code(e: &Error) -> u8 {
    match e.kind() {
        ErrorKind::Refused => EXIT_REFUSED,
        _ => EXIT_ERROR,
    }
}
