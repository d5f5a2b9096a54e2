//! `seed-agents-db copy --from <sqlite path> --to <postgres url>`: moves a whole store onto
//! PostgreSQL, verified table by table, or nothing at all.

use crate::report::{must_exist, print_json, Failure, Format};
use seed_agents_store::postgres;
use serde_json::json;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

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
            &json!({"from": from.display().to_string(), "to": report.database, "tables": tables}),
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(out, "copied {} to {}", from.display(), report.database)?;
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
