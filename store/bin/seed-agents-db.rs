//! `seed-agents-db`: open, inspect, check and document the Seed Agents database (built with the
//! `cli` feature).
//!
//! Results go to stdout, as text or, with `--json`, as one JSON document; errors, refusals and
//! progress go to stderr (with `--json`, an error is a JSON document there too). Progress of a
//! migration is drawn only when stderr is a terminal. Exit codes (also in `--help` and the
//! README): 0 success, 1 an error (busy, disk full, read-only, permission, I/O, ...; the file was
//! not judged), 2 a usage error (clap), 3 the schema gate refuses the file, 4 `check` or `audit
//! verify` found problems. Output goes through `writeln!`, so a closed pipe (`open | head -1`) ends the program
//! quietly instead of panicking.

mod audit;
mod report;

use clap::{Parser, Subcommand};
use report::Format;
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

/// Open, inspect, check and document the Seed Agents database.
#[derive(Parser)]
#[command(name = "seed-agents-db", version = VERSION.as_str(), about, after_help = EXIT_CODES)]
struct Cli {
    /// The database file [default: $SEED_AGENTS_DB_PATH, else data/agents.sqlite].
    #[arg(long, global = true, value_name = "PATH")]
    db_path: Option<PathBuf>,
    /// Print the result of open, status or check as one JSON document (errors too, on stderr).
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
}

#[derive(Subcommand)]
enum AuditCommand {
    /// Walk the hash chain: report edited, deleted, reordered or truncated rows by seq (exit 4).
    Verify,
    /// One page of events, newest first, and the token of the next page.
    List {
        /// Only the events concerning this account.
        #[arg(long)]
        account: Option<String>,
        /// Only this kind: provider, secret, tool or security.
        #[arg(long)]
        kind: Option<String>,
        /// Only events at or after this time (epoch milliseconds).
        #[arg(long)]
        since: Option<i64>,
        /// Only events before this time (epoch milliseconds).
        #[arg(long)]
        until: Option<i64>,
        /// Events per page (1 to 200, default 50).
        #[arg(long)]
        limit: Option<u32>,
        /// The page token a previous list printed as `next`.
        #[arg(long)]
        after: Option<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let path = resolve_path(cli.db_path.as_deref());
    let format = if cli.json { Format::Json } else { Format::Text };
    let out = &mut io::stdout().lock();
    let result = match cli.command {
        Command::Open => report::open(out, &path, format, io::stderr().is_terminal()),
        Command::Status => report::status(out, &path, format),
        Command::Check => report::check(out, &path, format),
        Command::Docs { out: dir } => report::docs(out, &dir),
        Command::Audit(AuditCommand::Verify) => audit::verify(out, &path, format),
        Command::Audit(AuditCommand::List {
            account,
            kind,
            since,
            until,
            limit,
            after,
        }) => {
            let args = audit::ListArgs {
                account,
                kind,
                since,
                until,
                limit,
                after,
            };
            audit::list(out, &path, format, args)
        }
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
