//! An HTTP server on the store: agents, sessions, their event log and the run queue as JSON
//! routes (see `app.rs`), with axum on tokio over an [`AsyncStore`].
//!
//! ```sh
//! cargo run --features tokio --example server -- --db data/agents.sqlite --listen 127.0.0.1:8080
//! curl -s -X POST -H 'x-account-id: acct-1' localhost:8080/agents
//! ```

mod app;

use std::net::SocketAddr;
use std::path::PathBuf;

use seed_agents_store::{AsyncStore, DEFAULT_DB_PATH};

/// What the command line asks for.
struct Args {
    db: PathBuf,
    listen: SocketAddr,
}

/// Reads `--db <path>` (default [`DEFAULT_DB_PATH`]) and `--listen <addr>` (default
/// `127.0.0.1:8080`).
fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut parsed = Args {
        db: PathBuf::from(DEFAULT_DB_PATH),
        listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
    };
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--db" => parsed.db = PathBuf::from(value()?),
            "--listen" => {
                let text = value()?;
                parsed.listen = text
                    .parse()
                    .map_err(|e| format!("--listen {text:?}: {e}"))?;
            }
            other => return Err(format!("unknown argument {other:?} (try --db, --listen)")),
        }
    }
    Ok(parsed)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args(std::env::args().skip(1))
        .inspect_err(|_| eprintln!("usage: server [--db <path>] [--listen <addr>]"))?;
    let store = AsyncStore::open(&args.db).await?;
    let listener = tokio::net::TcpListener::bind(args.listen).await?;
    eprintln!(
        "serving {} on http://{}",
        args.db.display(),
        listener.local_addr()?
    );
    axum::serve(listener, app::router(store)).await?;
    Ok(())
}
