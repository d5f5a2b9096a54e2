//! The running store's PostgreSQL connections: async `tokio-postgres` clients in a
//! `deadpool-postgres` pool, driven by a small runtime the store owns.
//!
//! Invariants:
//! - no caller's runtime is ever blocked on: the connections' tasks run on the store's own
//!   runtime, which a waiting caller drives itself where tokio allows it (a plain thread, the
//!   blocking pool) and a helper thread drives for it where tokio does not (inside a task), so
//!   a `Store` works from all three, never panicking ([`Runtime::block`]);
//! - a connection is bounded as it connects (`lock_timeout`, `idle_in_transaction_session_timeout`,
//!   TCP keepalives), so a stopped or partitioned node stalls only its own work;
//! - a connection the pool hands out is open (a closed one is recycled, never handed out) and
//!   younger than the pool's maximum lifetime; one that outlived it is closed when it comes back.

use crate::error::{Error, Result};
use deadpool::managed::{Metrics, RecycleResult};
use deadpool_postgres::{ClientWrapper, Manager, ManagerConfig, RecyclingMethod};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio_postgres::Statement;

/// A statement's text (its static address and length) and the types of its parameters as
/// bound: the key of a statement prepared on one connection.
pub(crate) type StatementKey = (usize, usize, Vec<u32>);

/// One pooled connection and the statements prepared on it, so that running a prepared
/// statement again costs no look-up at the server (and no round trip of its own).
pub(crate) struct Connection {
    pub(crate) client: ClientWrapper,
    pub(crate) statements: Mutex<HashMap<StatementKey, Statement>>,
    /// The connection's `synchronous_commit` (`on` when opened).
    pub(crate) synchronous: std::sync::atomic::AtomicBool,
    /// Whether the connection's `plan_cache_mode` is `force_generic_plan` (`auto` when opened).
    pub(crate) generic_plans: std::sync::atomic::AtomicBool,
}

/// `deadpool-postgres`'s manager (connecting, recycling), with each connection's statements.
pub(crate) struct Connector(Manager);

impl deadpool::managed::Manager for Connector {
    type Type = Connection;
    type Error = tokio_postgres::Error;

    async fn create(&self) -> std::result::Result<Connection, tokio_postgres::Error> {
        Ok(Connection {
            client: self.0.create().await?,
            statements: Mutex::new(HashMap::new()),
            synchronous: std::sync::atomic::AtomicBool::new(true),
            generic_plans: std::sync::atomic::AtomicBool::new(false),
        })
    }

    async fn recycle(
        &self,
        connection: &mut Connection,
        metrics: &Metrics,
    ) -> RecycleResult<tokio_postgres::Error> {
        self.0.recycle(&mut connection.client, metrics).await
    }

    fn detach(&self, connection: &mut Connection) {
        self.0.detach(&mut connection.client);
    }
}

/// The store's pool of connections.
pub(crate) type Pool = deadpool::managed::Pool<Connector>;
/// A connection leased from it.
pub(crate) type Object = deadpool::managed::Object<Connector>;

/// How long a store's session may wait or stall, set on each pooled connection as it connects
/// (`OpenOptions`: `busy_timeout`, `idle_in_transaction_timeout`, `keepalive`,
/// `connection_lifetime`), so that a stopped or partitioned node stalls only its own work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bounds {
    /// `lock_timeout`: the longest a statement waits for a lock (an advisory lock too) before
    /// failing with 55P03, which the store reports as `Error::Busy`. Also the longest an
    /// operation waits for a pooled connection.
    pub(crate) lock: Duration,
    /// `idle_in_transaction_session_timeout`: the server ends a session that sits this long in a
    /// transaction without a statement (a node stopped, or cut off, mid-write), which releases
    /// its locks.
    pub(crate) idle_in_transaction: Duration,
    /// TCP keepalives: the first probe after this long without traffic, then every third of it,
    /// three unanswered probes closing the connection.
    pub(crate) keepalive: Duration,
    /// A connection older than this is closed when it comes back to the pool (a server's
    /// memory per backend grows with what it has cached; a load balancer moves new ones).
    pub(crate) lifetime: Duration,
}

thread_local! {
    /// Whether this thread runs on tokio's blocking pool for the store ([`may_block`]).
    static MAY_BLOCK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with the calling thread marked as one of tokio's blocking pool, where the store
/// may drive its connections itself (`AsyncStore` runs every operation there).
pub(crate) fn may_block<T>(f: impl FnOnce() -> T) -> T {
    let before = MAY_BLOCK.with(|m| m.replace(true));
    let value = f();
    MAY_BLOCK.with(|m| m.set(before));
    value
}

/// The runtime the store's connection tasks run on: a current-thread one, driven by whichever
/// caller is waiting for a reply (no thread of its own to hand each reply over from), and shut
/// down without waiting when the store is dropped (also when that happens inside another
/// runtime).
pub(crate) struct Runtime(Option<tokio::runtime::Runtime>);

impl Runtime {
    /// Builds the runtime.
    pub(crate) fn start(name: &str) -> Result<Runtime> {
        tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map(|rt| Runtime(Some(rt)))
            .map_err(|source| Error::Io {
                path: std::path::PathBuf::from(name),
                source,
            })
    }

    /// Runs `future` to completion, blocking only the calling thread. On a plain thread, or
    /// one of tokio's blocking pool, the caller drives the connections while it waits. Inside
    /// a task, where tokio refuses that, a thread of its own drives them meanwhile and the
    /// caller waits with a plain executor: slower, never a panic.
    pub(crate) fn block<F: std::future::Future>(&self, future: F) -> F::Output {
        let runtime = self.0.as_ref().expect("taken only by drop");
        if tokio::runtime::Handle::try_current().is_err() || MAY_BLOCK.with(|m| m.get()) {
            return runtime.block_on(future);
        }
        std::thread::scope(|scope| {
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            scope.spawn(move || runtime.block_on(stopped));
            let value = {
                let _entered = runtime.handle().enter();
                futures_executor::block_on(future)
            };
            let _ = stop.send(());
            value
        })
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// The settings every connection of a store opens with: `url`'s, bounded by `bounds`.
pub(crate) fn config(url: &str, name: &str, bounds: Bounds) -> Result<tokio_postgres::Config> {
    let fail = |source| Error::Postgres {
        database: name.to_string(),
        source,
    };
    let mut config: tokio_postgres::Config = url.parse().map_err(fail)?;
    let millis = |d: Duration| d.as_millis().max(1);
    // `jit=off`: the store's statements are short, and a plan PostgreSQL costs high (a generic
    // plan of the run claim, say) would otherwise spend a second compiling.
    let options = format!(
        "{} -c lock_timeout={} -c idle_in_transaction_session_timeout={} -c jit=off",
        config.get_options().unwrap_or(""),
        millis(bounds.lock),
        millis(bounds.idle_in_transaction),
    );
    config
        .options(options.trim_start())
        .keepalives(true)
        .keepalives_idle(bounds.keepalive)
        .keepalives_interval((bounds.keepalive / 3).max(Duration::from_secs(1)))
        .keepalives_retries(3);
    Ok(config)
}

/// The pool of at most `max` connections opened with `config`, each bounded by `bounds`.
/// Connections open as they are first needed; waiting for one longer than `bounds.lock` fails
/// `Busy`.
pub(crate) fn pool(
    config: tokio_postgres::Config,
    name: &str,
    max: usize,
    bounds: Bounds,
) -> Result<Pool> {
    let manager = Manager::from_config(
        config,
        tokio_postgres::NoTls,
        ManagerConfig {
            // A closed connection is never handed out; one the network dropped silently fails
            // its first statement, and the pool then drops it (`Lease`), rather than costing
            // every acquire a round trip.
            recycling_method: RecyclingMethod::Fast,
        },
    );
    let lifetime = bounds.lifetime;
    Pool::builder(Connector(manager))
        .max_size(max.max(1))
        .runtime(deadpool::Runtime::Tokio1)
        .wait_timeout(Some(bounds.lock))
        .pre_recycle(deadpool::managed::Hook::sync_fn(move |_, metrics| {
            if metrics.age() > lifetime {
                return Err(deadpool::managed::HookError::message(
                    "the connection outlived its maximum lifetime",
                ));
            }
            Ok(())
        }))
        .build()
        .map_err(|e| Error::Io {
            path: std::path::PathBuf::from(name),
            source: std::io::Error::other(format!("building the connection pool: {e}")),
        })
}
