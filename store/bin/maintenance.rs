//! The maintenance commands of `seed-agents-db`: `retention show|set|clear` (the policies every
//! process on the file prunes with) and `prune [--dry-run]`, with how their results read.
//!
//! Ages are written as a whole number and a unit (`30d`, `12h`, `90m`, `45s`, `500ms`), in the
//! arguments and in the text reports alike; JSON carries milliseconds.

use crate::report::{must_exist, Failure, Format};
use seed_agents_store::prune::PruneOptions;
use seed_agents_store::retention::{Kind, RetentionPolicy};
use seed_agents_store::Store;
use serde_json::{json, Map, Value};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

/// The units an age is written in, largest first, with their length in milliseconds.
const UNITS: [(&str, i64); 5] = [
    ("d", 86_400_000),
    ("h", 3_600_000),
    ("m", 60_000),
    ("s", 1_000),
    ("ms", 1),
];

/// Parses an age such as `30d` into milliseconds (clap's value parser for `--max-age`).
pub(crate) fn parse_age(text: &str) -> Result<i64, String> {
    let digits = text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &text[digits.len()..];
    let (_, per) = UNITS
        .iter()
        .find(|(name, _)| *name == unit)
        .ok_or_else(|| format!("`{text}` needs a unit: d, h, m, s or ms (as in 30d)"))?;
    let n: i64 = digits
        .parse()
        .map_err(|_| format!("`{text}` is not a whole number followed by a unit (as in 30d)"))?;
    n.checked_mul(*per)
        .filter(|ms| *ms >= 1)
        .ok_or_else(|| format!("`{text}` must be at least 1ms and fit in 64-bit milliseconds"))
}

/// Parses a kind of row (clap's value parser for a policy's kind).
pub(crate) fn parse_kind(text: &str) -> Result<Kind, String> {
    Kind::parse(text).ok_or_else(|| {
        let all: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
        format!("`{text}` is not a kind; the kinds are {}", all.join(", "))
    })
}

/// An age in milliseconds in the largest unit that writes it whole.
fn age(ms: i64) -> String {
    let (unit, per) = UNITS
        .iter()
        .find(|(_, per)| ms % per == 0)
        .unwrap_or(&UNITS[4]);
    format!("{}{unit}", ms / per)
}

/// `retention show`: every kind, with its policy or "kept forever".
pub(crate) fn show(out: &mut impl Write, path: &Path, format: Format) -> Result<ExitCode, Failure> {
    let store = Store::open_read_only(path)?;
    let policies = store.retention_policies()?;
    let policy = |kind: Kind| policies.iter().find(|p| p.kind == kind);
    if format == Format::Json {
        let map: Map<String, Value> = Kind::ALL
            .iter()
            .map(|kind| {
                let value = policy(*kind).map_or(Value::Null, |p| {
                    json!({
                        "max_age_ms": p.max_age_ms,
                        "keep_count": p.keep_count,
                        "updated_at": p.updated_at,
                    })
                });
                (kind.as_str().to_owned(), value)
            })
            .collect();
        writeln!(
            out,
            "{:#}",
            json!({ "database": store.path(), "policies": map })
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(out, "database: {}", store.path().display())?;
    for kind in Kind::ALL {
        match policy(*kind) {
            None => writeln!(out, "  {:<20} kept forever (no policy)", kind.as_str())?,
            Some(p) => {
                let keep = p.keep_count.map_or_else(String::new, |n| {
                    format!(", keeping the newest {n} per session")
                });
                writeln!(
                    out,
                    "  {:<20} pruned after {}{keep}",
                    kind.as_str(),
                    age(p.max_age_ms)
                )?
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `retention set`: stores a kind's policy, then shows every policy.
pub(crate) fn set(
    out: &mut impl Write,
    path: &Path,
    format: Format,
    kind: Kind,
    policy: RetentionPolicy,
) -> Result<ExitCode, Failure> {
    must_exist(path)?;
    Store::open(path)?.set_retention_policy(kind, &policy)?;
    show(out, path, format)
}

/// `retention clear`: removes a kind's policy (a kind without one is fine), then shows them.
pub(crate) fn clear(
    out: &mut impl Write,
    path: &Path,
    format: Format,
    kind: Kind,
) -> Result<ExitCode, Failure> {
    must_exist(path)?;
    Store::open(path)?.clear_retention_policy(kind)?;
    show(out, path, format)
}

/// `prune`: applies the policies in batches (or counts, with `--dry-run`) and reports, per
/// table, the rows removed or that would be.
pub(crate) fn prune(
    out: &mut impl Write,
    path: &Path,
    format: Format,
    options: PruneOptions,
) -> Result<ExitCode, Failure> {
    // A dry run never writes, so it opens read-only (and, like a prune, never creates a file).
    let store = if options.dry_run {
        Store::open_read_only(path)?
    } else {
        must_exist(path)?;
        Store::open(path)?
    };
    let report = store.prune(&options)?;
    let longest_ms = report.longest_batch.as_secs_f64() * 1e3;
    if format == Format::Json {
        let doc = json!({
            "database": store.path(),
            "dry_run": report.dry_run,
            "kinds": report.kinds.iter().map(|k| k.as_str()).collect::<Vec<_>>(),
            "removed": report.removed,
            "batches": report.batches,
            "longest_batch_ms": longest_ms,
            "pages_freed": report.pages_freed,
        });
        writeln!(out, "{doc:#}")?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(out, "database: {}", store.path().display())?;
    if report.kinds.is_empty() {
        writeln!(
            out,
            "no retention policy is set, so nothing is pruned (see `seed-agents-db retention set`)"
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "{}",
        if report.dry_run {
            "would remove (dry run, nothing written):"
        } else {
            "removed:"
        }
    )?;
    for (table, rows) in &report.removed {
        writeln!(out, "  {table:<28} {rows:>10}")?;
    }
    if !report.dry_run {
        writeln!(
            out,
            "batches: {} of at most {} rows, the longest {longest_ms:.1} ms",
            report.batches, options.batch_rows
        )?;
        writeln!(
            out,
            "pages given back to the file system: {}",
            report.pages_freed
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_and_write_in_units() {
        assert_eq!(parse_age("30d"), Ok(30 * 86_400_000));
        assert_eq!(parse_age("500ms"), Ok(500));
        assert_eq!(parse_age("90m"), Ok(5_400_000));
        for bad in ["30", "d", "0d", "-1d", "3w", "1.5h", "99999999999999999d"] {
            assert!(parse_age(bad).is_err(), "{bad}");
        }
        assert_eq!(age(30 * 86_400_000), "30d");
        assert_eq!(age(5_400_000), "90m");
        assert_eq!(age(1_500), "1500ms");
    }
}
