//! `seed-agents-db audit`: verify the audit log's hash chain, list its events. Both only read:
//! the file is opened read-only.

use crate::report::{print_json, Failure, Format};
use crate::EXIT_PROBLEMS;
use seed_agents_store::audit::AuditFilter;
use seed_agents_store::paging::Cursor;
use seed_agents_store::schema::audit_events::{Kind, Row};
use seed_agents_store::Store;
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

/// `audit verify`: walks every chain; exit 4 when it found problems, each naming its chain and
/// seq.
pub(crate) fn verify(
    out: &mut impl Write,
    path: &Path,
    format: Format,
) -> Result<ExitCode, Failure> {
    let store = Store::open_read_only(path)?;
    let r = store.verify_audit_log()?;
    if format == Format::Json {
        let problems: Vec<Value> = r
            .problems
            .iter()
            .map(|p| json!({ "chain": p.chain, "seq": p.seq, "kind": p.kind.as_str(), "missing": p.missing, "message": p.to_string() }))
            .collect();
        let doc = json!({
            "database": path,
            "rows": r.rows,
            "chains": r.chains,
            "anchor_seq": r.anchor_seq,
            "head_seq": r.head_seq,
            "head_hash": r.head_hash,
            "problems": problems,
            "intact": r.is_intact(),
        });
        print_json(out, &doc)?;
    } else {
        writeln!(out, "database: {}", path.display())?;
        if r.chains > 1 {
            writeln!(
                out,
                "audit log: {} row(s) in {} chains (one per account), {} pruned, head hash {}",
                r.rows, r.chains, r.anchor_seq, r.head_hash
            )?;
        } else {
            writeln!(
                out,
                "audit log: {} row(s), seq {}..={}, head hash {}",
                r.rows,
                r.anchor_seq + 1,
                r.head_seq,
                r.head_hash
            )?;
        }
        for p in &r.problems {
            match p.chain.as_str() {
                "" => writeln!(out, "  {p} (the log before version 36)")?,
                chain => writeln!(out, "  {p} (chain of {chain})")?,
            }
        }
        let result = if r.is_intact() {
            "the chain is intact"
        } else {
            "problems found"
        };
        writeln!(out, "result: {result}")?;
    }
    Ok(if r.is_intact() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_PROBLEMS)
    })
}

/// What `audit list` asks for.
#[derive(clap::Args)]
pub(crate) struct ListArgs {
    /// Only the events concerning this account.
    #[arg(long)]
    pub(crate) account: Option<String>,
    /// Only this kind: provider, secret, tool or security.
    #[arg(long)]
    pub(crate) kind: Option<String>,
    /// Only events at or after this time (epoch milliseconds).
    #[arg(long)]
    pub(crate) since: Option<i64>,
    /// Only events before this time (epoch milliseconds).
    #[arg(long)]
    pub(crate) until: Option<i64>,
    /// Events per page (1 to 200, default 50).
    #[arg(long)]
    pub(crate) limit: Option<u32>,
    /// The page token a previous list printed as `next`.
    #[arg(long)]
    pub(crate) after: Option<String>,
}

fn row_json(r: &Row) -> Value {
    json!({
        "chain": r.chain, "seq": r.seq, "at": r.at, "account_id": r.account_id, "actor": r.actor,
        "kind": r.kind.as_str(), "action": r.action, "target": r.target,
        "outcome": r.outcome.as_str(), "detail": r.detail,
    })
}

/// `audit list`: one page of events, newest first; the next page's token last.
pub(crate) fn list(
    out: &mut impl Write,
    path: &Path,
    format: Format,
    args: ListArgs,
) -> Result<ExitCode, Failure> {
    let kind = args
        .kind
        .map(|k| {
            Kind::parse(&k).ok_or_else(|| seed_agents_store::Error::Invalid {
                field: "kind",
                reason: format!("{k:?} is not provider, secret, tool or security"),
            })
        })
        .transpose()?;
    let after = args.after.as_deref().map(Cursor::from_token).transpose()?;
    let filter = AuditFilter {
        account_id: args.account,
        kind,
        since: args.since,
        until: args.until,
    };
    let store = Store::open_read_only(path)?;
    let page = store.audit_events(&filter, args.limit, after.as_ref())?;
    let next = page.next.as_ref().map(Cursor::to_token);
    if format == Format::Json {
        let items: Vec<Value> = page.items.iter().map(row_json).collect();
        print_json(out, &json!({ "events": items, "next": next }))?;
    } else {
        for r in &page.items {
            writeln!(
                out,
                "{} {} {} {} {} {} {} {}",
                r.seq,
                r.at,
                r.account_id,
                r.actor,
                r.action,
                r.target,
                r.outcome.as_str(),
                r.detail.as_deref().unwrap_or("-")
            )?;
        }
        if let Some(next) = next {
            writeln!(out, "next: {next}")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
