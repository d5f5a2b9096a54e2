//! The PostgreSQL commands of `seed-agents-db`: `copy --from <sqlite path> --to <postgres url>`,
//! which moves a whole store onto PostgreSQL, verified table by table, or nothing at all; and
//! `status`/`check` on a `--db-url`, which judge the database with the gate without writing.

use crate::report::{must_exist, print_json, Failure, Format};
use seed_agents_store::postgres::{self, Database, State};
use seed_agents_store::{schema, Error};
use serde_json::json;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

/// `status` and `check` of a PostgreSQL database: the gate's verdict, read-only.
pub(crate) fn status(out: &mut impl Write, url: &str, format: Format) -> Result<ExitCode, Failure> {
    let mut database = Database::connect(url)?;
    let supported = schema::SCHEMA_VERSION;
    let (state, version, detail) = match database.inspect() {
        Ok(State::Fresh) => ("empty", None, None),
        Ok(State::At(v)) => ("verified", Some(v), None),
        Err(Error::PostgresRefused { reason, .. }) => ("refused", None, Some(reason)),
        Err(e) => return Err(e.into()),
    };
    if format == Format::Json {
        let mut doc = json!({"database": database.name(), "state": state, "supported": supported});
        if let Some(v) = version {
            doc["version"] = json!(v);
        }
        if let Some(reason) = &detail {
            doc["reason"] = json!(reason.to_string());
            doc["advice"] = json!(reason.postgres_advice(database.name()));
        }
        print_json(out, &doc)?;
    } else {
        writeln!(out, "database: {}", database.name())?;
        match (version, &detail) {
            (Some(v), _) => writeln!(
                out,
                "state: verified at version {v} (this binary: {supported})"
            )?,
            (_, Some(reason)) => {
                writeln!(out, "state: refused: {reason}")?;
                writeln!(out, "{}", reason.postgres_advice(database.name()))?;
            }
            _ => writeln!(out, "state: empty (open installs version {supported})")?,
        }
    }
    Ok(if detail.is_some() {
        ExitCode::from(crate::EXIT_REFUSED)
    } else {
        ExitCode::SUCCESS
    })
}

/// Copies, then reports every table's rows and checksum (verified on both sides).
pub(crate) fn copy(
    out: &mut impl Write,
    from: &Path,
    to: &str,
    format: Format,
) -> Result<ExitCode, Failure> {
    must_exist(from)?;
    let report = postgres::copy(from, to)?;
    if format == Format::Json {
        let tables: Vec<_> = report
            .tables
            .iter()
            .map(|t| json!({"table": t.table, "rows": t.rows, "checksum": t.checksum}))
            .collect();
        print_json(
            out,
            &json!({
                "from": from.display().to_string(),
                "from_version": report.source_version,
                "to": report.database,
                "version": schema::SCHEMA_VERSION,
                "tables": tables,
            }),
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(out, "copied {} to {}", from.display(), report.database)?;
    if report.source_version < schema::SCHEMA_VERSION {
        writeln!(
            out,
            "  the file is at version {}: a private snapshot of it was migrated to {} and copied; the file was not changed",
            report.source_version,
            schema::SCHEMA_VERSION
        )?;
    }
    for t in &report.tables {
        writeln!(out, "  {:<32} {:>10} rows  {}", t.table, t.rows, t.checksum)?;
    }
    let rows: u64 = report.tables.iter().map(|t| t.rows).sum();
    writeln!(
        out,
        "{rows} rows in {} tables, counts and checksums verified",
        report.tables.len()
    )?;
    Ok(ExitCode::SUCCESS)
}
