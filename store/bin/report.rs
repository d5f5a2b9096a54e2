//! The commands of `seed-agents-db` and how their results read: text for people, one JSON
//! document for scripts (`--json`). Results go to the writer given (stdout); refusals and
//! progress go to stderr, so a script reading stdout sees only the result.

use crate::{EXIT_PROBLEMS, EXIT_REFUSED};
use indicatif::{ProgressBar, ProgressStyle};
use seed_agents_store::{
    integrity, schema, status as inspect, Error, Outcome, Progress, Store, Verdict,
};
use serde_json::{json, Map, Value};
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

/// How a result is printed.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Text,
    Json,
}

/// Why a command stopped.
pub(crate) enum Failure {
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

/// An error as the JSON document `--json` prints on stderr.
pub(crate) fn error_json(e: &Error) -> Value {
    json!({ "error": { "kind": e.kind().as_str(), "message": e.to_string() } })
}

/// Refuses a path with no file: only `open` creates a database, so a mistyped `--db-path` given
/// to a maintenance command is an error naming it, not a new empty database.
pub(crate) fn must_exist(path: &Path) -> Result<(), Failure> {
    if seed_agents_store::is_postgres_url(&path.to_string_lossy()) {
        // A server's database: the gate says whether it holds a store.
        return Ok(());
    }
    match std::fs::metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(Error::Io {
            path: path.to_owned(),
            source: io::Error::new(
                io::ErrorKind::NotFound,
                "no database here (`seed-agents-db open` creates one)",
            ),
        }
        .into()),
        _ => Ok(()),
    }
}

pub(crate) fn print_json(out: &mut impl Write, doc: &Value) -> io::Result<()> {
    writeln!(out, "{doc:#}")
}

/// `open`: install or migrate, then report the outcome and every table's row count. `progress`
/// draws the migration's steps on stderr (only when it is a terminal).
pub(crate) fn open(
    out: &mut impl Write,
    path: &Path,
    format: Format,
    progress: bool,
) -> Result<ExitCode, Failure> {
    let bar = progress.then(migration_bar);
    let drawn = bar.clone();
    let opened = Store::options()
        .on_progress(move |p| match &drawn {
            Some(bar) => draw(bar, p),
            // Without a terminal only what an operator must know is said: the file keeps its
            // free pages.
            None => {
                if let Progress::CompactionSkipped { reason } = p {
                    let _ = writeln!(io::stderr(), "{}", not_compacted(reason));
                }
            }
        })
        .open(path);
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let store = opened?;
    let counts = store.table_counts()?;
    if format == Format::Json {
        let outcome = match store.outcome() {
            Outcome::Fresh { version } => json!({ "kind": "fresh", "version": version }),
            Outcome::Migrated { from, to } => json!({ "kind": "migrated", "from": from, "to": to }),
            Outcome::Current { version } => json!({ "kind": "current", "version": version }),
        };
        let tables: Map<String, Value> = counts
            .iter()
            .map(|(t, n)| (t.to_string(), json!(n)))
            .collect();
        let doc = json!({
            "database": store.path(),
            "outcome": outcome,
            "tables": tables,
        });
        print_json(out, &doc)?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(out, "database: {}", store.path().display())?;
    let outcome = match store.outcome() {
        Outcome::Fresh { version } => format!("fresh install at version {version}"),
        Outcome::Migrated { from, to } => format!("migrated from version {from} to {to}"),
        Outcome::Current { version } => format!("current at version {version}"),
    };
    writeln!(out, "outcome: {outcome}")?;
    writeln!(out, "tables:")?;
    for (table, rows) in counts {
        writeln!(out, "  {table:<28} {rows:>10}")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// What a compaction that failed after a migration leaves.
fn not_compacted(reason: &str) -> String {
    format!(
        "not compacted after the migration ({reason}): the migrated file is complete and keeps \
         its free pages, which later writes reuse"
    )
}

/// A bar on stderr, hidden until opening reports a step (a current file reports none).
fn migration_bar() -> ProgressBar {
    let bar = ProgressBar::hidden();
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{pos}/{len}] {msg} ({elapsed})")
            .expect("the template is valid"),
    );
    bar
}

fn draw(bar: &ProgressBar, p: Progress<'_>) {
    if bar.is_hidden() {
        bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
        bar.enable_steady_tick(Duration::from_millis(100));
    }
    match p {
        Progress::Installing { version } => {
            bar.set_length(1);
            bar.set_message(format!("installing version {version}"));
        }
        Progress::Checking => {
            bar.set_message("checking the whole file (integrity, foreign keys) before migrating")
        }
        Progress::Migrating { step, steps, name } => {
            bar.set_length(steps as u64);
            bar.set_position(step as u64 - 1);
            bar.set_message(name.to_string());
        }
        Progress::Migrated {
            step,
            steps,
            name,
            rows,
        } => {
            bar.set_position(step as u64);
            bar.println(format!("[{step}/{steps}] {name}: {rows} rows"));
        }
        Progress::Verifying => bar.set_message("verifying the migrated structure"),
        Progress::Compacting { free_pages, pages } => bar.set_message(format!(
            "giving back the {free_pages} of {pages} pages the migration left free (VACUUM)"
        )),
        Progress::Compacted { pages } => {
            bar.println(format!("compacted: the file holds {pages} pages"))
        }
        Progress::CompactionSkipped { reason } => bar.println(not_compacted(reason)),
        _ => {}
    }
}

/// The verdict's fields in a JSON document.
fn verdict_json(doc: &mut Map<String, Value>, path: &Path, v: &Verdict) {
    match v {
        Verdict::Missing => {
            doc.insert("state".into(), json!("missing"));
        }
        Verdict::Fresh => {
            doc.insert("state".into(), json!("empty"));
        }
        Verdict::Verified { version, pending } => {
            doc.insert("state".into(), json!("verified"));
            doc.insert("version".into(), json!(version));
            doc.insert("pending".into(), json!(pending));
        }
        Verdict::Refused(reason) => {
            doc.insert("state".into(), json!("refused"));
            doc.insert("reason".into(), json!(reason.to_string()));
            doc.insert("advice".into(), json!(reason.advice(path)));
        }
    }
}

/// Prints the gate's verdict (a refusal on stderr); returns whether the gate refused the file.
fn verdict_text(
    out: &mut impl Write,
    path: &Path,
    v: &Verdict,
    supported: u32,
) -> io::Result<bool> {
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

/// `status`: the gate's verdict, read-only.
pub(crate) fn status(
    out: &mut impl Write,
    path: &Path,
    format: Format,
) -> Result<ExitCode, Failure> {
    let s = inspect(path)?;
    let refused = matches!(s.verdict, Verdict::Refused(_));
    if format == Format::Json {
        let mut doc = Map::new();
        doc.insert("database".into(), json!(s.path));
        doc.insert("binary_version".into(), json!(s.supported));
        verdict_json(&mut doc, path, &s.verdict);
        print_json(out, &Value::Object(doc))?;
    } else {
        writeln!(out, "database: {}", s.path.display())?;
        writeln!(out, "binary version: {}", s.supported)?;
        verdict_text(out, path, &s.verdict, s.supported)?;
    }
    Ok(if refused {
        ExitCode::from(EXIT_REFUSED)
    } else {
        ExitCode::SUCCESS
    })
}

/// `check`: integrity, foreign keys and structure, read-only.
pub(crate) fn check(
    out: &mut impl Write,
    path: &Path,
    format: Format,
) -> Result<ExitCode, Failure> {
    let r = integrity::check(path)?;
    if format == Format::Json {
        let mut doc = Map::new();
        doc.insert("database".into(), json!(r.path));
        verdict_json(&mut doc, path, &r.verdict);
        doc.insert("integrity_check".into(), json!(r.integrity));
        doc.insert("foreign_key_check".into(), json!(r.foreign_keys));
        doc.insert("clean".into(), json!(r.is_clean()));
        print_json(out, &Value::Object(doc))?;
    } else {
        writeln!(out, "database: {}", r.path.display())?;
        verdict_text(out, path, &r.verdict, schema::SCHEMA_VERSION)?;
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
        let result = if r.is_clean() {
            "no problems found"
        } else {
            "problems found"
        };
        writeln!(out, "result: {result}")?;
    }
    Ok(if r.is_clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_PROBLEMS)
    })
}

/// `docs --out DIR`: one Markdown page per table.
pub(crate) fn docs(out: &mut impl Write, dir: &Path) -> Result<ExitCode, Failure> {
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
