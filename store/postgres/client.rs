//! A PostgreSQL client that can be dropped anywhere.
//!
//! The blocking `postgres` client owns a small tokio runtime and runs it when it closes, and
//! tokio panics when a runtime is started, or dropped, on a thread that is already running one.
//! A store dropped inside a server's runtime (the last `AsyncStore` of a handler, a test's
//! runtime shutting down) would then panic inside a destructor. Invariant: dropping a
//! [`Client`] never panics: inside a runtime, the connection is closed on a thread of its own.

use std::ops::{Deref, DerefMut};

/// The blocking client, closed off the caller's runtime when dropped inside one.
pub(crate) struct Client(Option<postgres::Client>);

/// How long a store's session may wait or stall, set on each pooled connection as it connects
/// (`OpenOptions`: `busy_timeout`, `idle_in_transaction_timeout`, `keepalive`), so that a
/// stopped or partitioned node stalls only its own work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bounds {
    /// `lock_timeout`: the longest a statement waits for a lock (an advisory lock too) before
    /// failing with 55P03, which the store reports as `Error::Busy`.
    pub(crate) lock: std::time::Duration,
    /// `idle_in_transaction_session_timeout`: the server ends a session that sits this long in a
    /// transaction without a statement (a node stopped, or cut off, mid-write), which releases
    /// its locks.
    pub(crate) idle_in_transaction: std::time::Duration,
    /// TCP keepalives: the first probe after this long without traffic, then every third of it,
    /// three unanswered probes closing the connection.
    pub(crate) keepalive: std::time::Duration,
}

impl Client {
    /// Connects to `url` (no TLS: the store talks to its server on a trusted network or a
    /// socket).
    pub(crate) fn connect(url: &str) -> Result<Client, postgres::Error> {
        postgres::Client::connect(url, postgres::NoTls).map(|c| Client(Some(c)))
    }

    /// Connects to `url` with the session bounded by `bounds` (after any `options` the URL sets).
    pub(crate) fn connect_bounded(url: &str, bounds: Bounds) -> Result<Client, postgres::Error> {
        let mut config: postgres::Config = url.parse()?;
        let millis = |d: std::time::Duration| d.as_millis().max(1);
        // `jit=off`: the store's statements are short, and a plan PostgreSQL costs high (a
        // generic plan of the run claim, say) would otherwise spend a second compiling.
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
            .keepalives_interval((bounds.keepalive / 3).max(std::time::Duration::from_secs(1)))
            .keepalives_retries(3);
        config.connect(postgres::NoTls).map(|c| Client(Some(c)))
    }
}

impl Deref for Client {
    type Target = postgres::Client;

    fn deref(&self) -> &postgres::Client {
        self.0.as_ref().expect("taken only by drop")
    }
}

impl DerefMut for Client {
    fn deref_mut(&mut self) -> &mut postgres::Client {
        self.0.as_mut().expect("taken only by drop")
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let Some(client) = self.0.take() else { return };
        if tokio::runtime::Handle::try_current().is_err() {
            return drop(client);
        }
        // Closing sends one message and waits for the connection task: brief, so the calling
        // runtime thread waits for it rather than leave a connection half closed. Should no
        // thread be had, the client is leaked (its socket closes with the process): dropping
        // it here would panic.
        let client = std::mem::ManuallyDrop::new(client);
        if let Ok(closing) = std::thread::Builder::new()
            .name("seed-agents-pg-close".into())
            .spawn(move || drop(std::mem::ManuallyDrop::into_inner(client)))
        {
            let _ = closing.join();
        }
    }
}
