//! The blocking client that installs, migrates and copies (one connection, one caller), and
//! that can be dropped anywhere.
//!
//! The blocking `postgres` client owns a small tokio runtime and runs it when it closes, and
//! tokio panics when a runtime is started, or dropped, on a thread that is already running one.
//! A store dropped inside a server's runtime (the last `AsyncStore` of a handler, a test's
//! runtime shutting down) would then panic inside a destructor. Invariant: dropping a
//! [`Client`] never panics: inside a runtime, the connection is closed on a thread of its own,
//! and work with it that may run inside one goes through [`off_runtime`].
//! The running store's own connections are pooled async ones (`super::connections`).

use std::ops::{Deref, DerefMut};

/// The blocking client, closed off the caller's runtime when dropped inside one.
pub(crate) struct Client(Option<postgres::Client>);

impl Client {
    /// Connects to `url` (no TLS: the store talks to its server on a trusted network or a
    /// socket).
    pub(crate) fn connect(url: &str) -> Result<Client, postgres::Error> {
        postgres::Client::connect(url, postgres::NoTls).map(|c| Client(Some(c)))
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

/// Runs `work` (which uses the blocking client) on the calling thread, or, when that thread is
/// inside a tokio runtime (a sync `Store::open` from async code), on a plain thread of its
/// own while the caller waits: the blocking client starts a runtime of its own, which tokio
/// refuses inside another.
pub(crate) fn off_runtime<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    if tokio::runtime::Handle::try_current().is_err() {
        return work();
    }
    std::thread::scope(|scope| match scope.spawn(work).join() {
        Ok(value) => value,
        Err(panic) => std::panic::resume_unwind(panic),
    })
}
