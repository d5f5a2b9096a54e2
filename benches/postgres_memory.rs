//! Rows stream on PostgreSQL: the peak resident memory of `audit verify` over an audit log of
//! 10,000 rows and of 1,000,000 rows, each in a fresh process (`VmHWM`), with the rows read.
//! Constant memory shows as the same peak for both.
//!
//! The logs are real chains: written by the store on SQLite (a refused read of another
//! account's session is one audited write each), then moved with `postgres::copy`.
//!
//! Needs a server: `SEED_AGENTS_BENCH_POSTGRES` (else `SEED_AGENTS_TEST_POSTGRES`), e.g.
//! `scripts/with-postgres.sh cargo bench --features postgres --bench postgres_memory`.
//! `MEMORY_ROWS` sets the sizes (default `10000,1000000`).

mod pg_common;

use pg_common::{fresh_database, server};
use seed_agents_store::agents::NewAgent;
use seed_agents_store::sessions::NewSession;
use seed_agents_store::{Durability, Store};
use std::process::Command;

const CHILD: &str = "MEMORY_BENCH_VERIFY";

/// A SQLite store at `path` whose audit log holds `n` rows.
fn audited(path: &std::path::Path, n: usize) {
    let store = Store::open(path).unwrap();
    store.set_durability(Durability::Normal).unwrap();
    let agent = store
        .create_agent(
            "acct-a",
            &NewAgent {
                definition: Default::default(),
                state_dir: "/srv/agents/a".into(),
                public_read: false,
                public_chat: false,
            },
        )
        .unwrap();
    let new = NewSession {
        agent_id: agent.id,
        ..NewSession::default()
    };
    let session = store.create_session("acct-a", &new).unwrap().id;
    let have = store.verify_audit_log().unwrap().rows as usize;
    for _ in have..n {
        assert!(store.session("acct-b", &session).unwrap().is_none());
    }
}

/// The peak resident set of this process, in KiB.
fn peak_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn main() {
    if let Ok(url) = std::env::var(CHILD) {
        let store = Store::open(&url).unwrap();
        let report = store.verify_audit_log().unwrap();
        assert!(report.is_intact(), "{report:?}");
        println!("ROWS {} PEAK {}", report.rows, peak_kib());
        return;
    }
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let Some(admin) = server() else {
        eprintln!("postgres_memory: no server (set SEED_AGENTS_BENCH_POSTGRES); nothing measured");
        return;
    };
    let sizes: Vec<usize> = std::env::var("MEMORY_ROWS")
        .ok()
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000, 1_000_000]);
    let dir = tempfile::tempdir().unwrap();
    eprintln!("audit verify on PostgreSQL, peak resident memory of the verifying process:");
    for n in sizes {
        let path = dir.path().join(format!("audit-{n}.sqlite"));
        audited(&path, n);
        let url = fresh_database(&admin, "sa_bench_memory");
        seed_agents_store::postgres::copy(&path, &url).unwrap();
        let out = Command::new(std::env::current_exe().unwrap())
            .env(CHILD, &url)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let line = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        eprintln!("{n:>9} rows wanted: {line} KiB");
    }
}
