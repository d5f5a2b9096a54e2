//! The key commands of `seed-agents-db`: `rotate-key` and `move-key`. Results go to stdout
//! (text, or one JSON document with `--json`); a rotation's progress goes to stderr, one line
//! per batch.

use crate::report::{must_exist, print_json, Failure, Format};
use seed_agents_store::keys::{provider_from_spec, RotateOptions};
use seed_agents_store::Store;
use serde_json::json;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

/// Opens the store with the key provider `spec` names (the database when `None`).
fn open(path: &Path, spec: Option<&str>) -> Result<Store, Failure> {
    must_exist(path)?;
    let mut options = Store::options();
    if let Some(spec) = spec {
        options = options.boxed_key_provider(provider_from_spec(spec)?);
    }
    Ok(options.open(path)?)
}

/// `rotate-key`: a new key, every encrypted value re-encrypted in batches, the old keys retired;
/// starting it again resumes an interrupted rotation.
pub(crate) fn rotate(
    out: &mut impl Write,
    path: &Path,
    format: Format,
    spec: Option<&str>,
    batch_rows: usize,
) -> Result<ExitCode, Failure> {
    let store = open(path, spec)?;
    let options = RotateOptions::new()
        .batch_rows(batch_rows)
        .on_progress(|p| {
            eprintln!(
                "key {}: {} rows re-encrypted ({}), {} remaining",
                p.key_id, p.rotated, p.table, p.remaining
            );
        });
    let report = store.rotate_key(options)?;
    if format == Format::Json {
        let rotated: serde_json::Map<_, _> = report
            .rotated
            .iter()
            .map(|(t, n)| (t.to_string(), json!(n)))
            .collect();
        print_json(
            out,
            &json!({
                "key_id": report.key_id,
                "started": report.started,
                "rotated": rotated,
                "batches": report.batches,
                "remaining": report.remaining,
                "retired": report.retired,
                "complete": report.complete,
            }),
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    let how = if report.started {
        "rotated to"
    } else {
        "resumed rotating to"
    };
    writeln!(out, "{how} key {}", report.key_id)?;
    for (table, rows) in &report.rotated {
        writeln!(out, "  {table:<28} {rows:>10} re-encrypted")?;
    }
    writeln!(out, "batches: {}", report.batches)?;
    let retired: Vec<String> = report.retired.iter().map(i64::to_string).collect();
    writeln!(
        out,
        "retired keys: {}",
        if retired.is_empty() {
            "none".into()
        } else {
            retired.join(", ")
        }
    )?;
    writeln!(
        out,
        "{}",
        if report.complete {
            "complete".to_string()
        } else {
            format!("{} rows remaining: run rotate-key again", report.remaining)
        }
    )?;
    Ok(ExitCode::SUCCESS)
}

/// `move-key --to SPEC`: the key leaves the database for an external provider.
pub(crate) fn move_out(
    out: &mut impl Write,
    path: &Path,
    format: Format,
    to: &str,
) -> Result<ExitCode, Failure> {
    let store = open(path, None)?;
    let target = provider_from_spec(to)?;
    let report = store.move_key_out(&*target)?;
    if format == Format::Json {
        print_json(
            out,
            &json!({
                "key_id": report.key_id,
                "fingerprint": report.fingerprint,
                "target": report.target,
                "stored_by_target": report.stored_by_target,
                "log_truncated": report.log_truncated,
            }),
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "key {} (fingerprint {}) moved to {}{}",
        report.key_id,
        report.fingerprint,
        report.target,
        if report.stored_by_target {
            ", which stored it"
        } else {
            ""
        }
    )?;
    writeln!(
        out,
        "removed from the database{}",
        if report.log_truncated {
            ", its free pages and its log"
        } else {
            " and its free pages; the log still holds old frames until the next checkpoint"
        }
    )?;
    writeln!(out, "open the store with --key-provider {to} from now on")?;
    Ok(ExitCode::SUCCESS)
}
