//! The async handle (`tokio` feature): [`AsyncStore`], every operation of [`Store`] as a future.
//!
//! SQLite calls block, so each operation runs on tokio's blocking pool
//! ([`tokio::task::spawn_blocking`]) and the future only waits for it: a runtime thread never
//! blocks on a lock, a read or a group commit. Invariant: the operations are the sync ones,
//! generated from their signatures by [`async_operations!`] (`audit`, `conversation`, `execution`,
//! `tools`, `maintenance`, and the handle's own below), so the two handles cannot drift in
//! behavior; an operation that takes a closure, and any read of your own on [`Store::conn`], goes
//! through [`AsyncStore::call`].

mod audit;
mod conversation;
mod execution;
mod feed;
mod maintenance;
mod tools;

use std::future::Future;
use std::path::Path;
use std::sync::Arc;

use crate::error::Result;
use crate::handle::Durability;
use crate::sql::dynamic::{Bound, FromRow};
use crate::sqlite::commit::CommitStats;
use crate::sqlite::migrate::Outcome;
use crate::sqlite::open::OpenOptions;
use crate::values::clock::Clock;
use crate::Store;

pub use feed::{AsyncRunWaiter, EventStream, JournalStream};

/// Generates the async counterpart of each sync operation from its signature, written as in
/// the sync `impl Store` without `&self` and with the `Ok` type as the return type. Each method
/// owns its arguments (a `&T` as `T::Owned`, an `Option<&T>` as `Option<T::Owned>`, a value as
/// it is), moves them to the blocking pool, and lends them back to the sync operation there.
///
/// A parameter's form is matched from its tokens, so `Option<&T>` must be spelled so (not
/// behind an alias) and the forms are tried in that order: `Option<&T>`, `&T`, then by value.
macro_rules! async_operations {
    ($( fn $name:ident ( $($params:tt)* ) -> $ret:ty ; )*) => {
        impl $crate::AsyncStore {
            $( async_operations!(@param [$name] [$ret] [] [] [] $($params)*); )*
        }
    };
    // Every parameter sorted: the method.
    (@param [$name:ident] [$ret:ty] [$($decl:tt)*] [$($own:tt)*] [$($lend:tt)*]) => {
        #[doc = concat!("[`Store::", stringify!($name), "`](crate::Store::", stringify!($name),
            ") as a future, on the blocking pool: the same arguments, result and errors.")]
        pub async fn $name(&self, $($decl)*) -> $crate::Result<$ret> {
            $($own)*
            self.call(move |store| store.$name($($lend)*)).await
        }
    };
    (@param $name:tt $ret:tt [$($decl:tt)*] [$($own:tt)*] [$($lend:tt)*]
        $p:ident : Option<&$t:ty> $(, $($rest:tt)*)?) => {
        async_operations!(@param $name $ret
            [$($decl)* $p: Option<&$t>,]
            [$($own)* let $p = $p.map(::std::borrow::ToOwned::to_owned);]
            [$($lend)* $p.as_ref().map(::std::borrow::Borrow::<$t>::borrow),]
            $($($rest)*)?);
    };
    (@param $name:tt $ret:tt [$($decl:tt)*] [$($own:tt)*] [$($lend:tt)*]
        $p:ident : &$t:ty $(, $($rest:tt)*)?) => {
        async_operations!(@param $name $ret
            [$($decl)* $p: &$t,]
            [$($own)* let $p = ::std::borrow::ToOwned::to_owned($p);]
            [$($lend)* ::std::borrow::Borrow::<$t>::borrow(&$p),]
            $($($rest)*)?);
    };
    (@param $name:tt $ret:tt [$($decl:tt)*] [$($own:tt)*] [$($lend:tt)*]
        $p:ident : $t:ty $(, $($rest:tt)*)?) => {
        async_operations!(@param $name $ret [$($decl)* $p: $t,] [$($own)*] [$($lend)* $p,]
            $($($rest)*)?);
    };
}
use async_operations;

/// A [`Store`] for async code: cheap to clone, `Send + Sync`, every operation an `async fn`
/// with the sync one's name, parameters, result and errors.
///
/// Each operation runs on tokio's blocking pool, so awaiting one never blocks the runtime, and
/// clones share one store (its read pool and its group-committing writer) exactly as clones of
/// [`Store`] do. Two things differ from calling the sync handle:
///
/// - the arguments are copied (`to_owned`) before the operation runs, because a blocking task
///   cannot borrow from the caller;
/// - dropping the future does not cancel the operation: once started it runs to its end on the
///   blocking pool (a write commits) and only its result is dropped.
///
/// Operations that take a closure ([`Store::idempotent`], [`Store::continue_session_with`]),
/// reads on [`Store::conn`] with the generated helpers or the query macros, and any sequence
/// that should run on one blocking thread go through [`AsyncStore::call`].
///
/// # Panics
/// Every async method must be awaited inside a tokio runtime (it spawns a blocking task);
/// a panic in the sync operation resumes on the awaiting task.
///
/// # Examples
/// ```
/// use seed_agents_store::agents::NewAgent;
/// use seed_agents_store::payload::{AgentDefinition, MessageEvent};
/// use seed_agents_store::sessions::NewSession;
/// use seed_agents_store::AsyncStore;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// let store = AsyncStore::open(dir.path().join("agents.sqlite")).await?;
/// let agent = store
///     .create_agent("acct-1", &NewAgent {
///         definition: AgentDefinition::default(),
///         state_dir: "/var/lib/seed/agents/agent-1".into(),
///         public_read: false,
///         public_chat: false,
///     })
///     .await?;
/// let session = store
///     .create_session("acct-1", &NewSession { agent_id: agent.id, ..NewSession::default() })
///     .await?;
/// let hello = MessageEvent::user("hello").into();
/// let appended = store.append_event("acct-1", &session.id, &hello).await?;
/// let replay = store.events_after("acct-1", &session.id, 0, None).await?;
/// assert_eq!(replay[0].seq, appended.seq);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct AsyncStore {
    store: Store,
}

impl From<Store> for AsyncStore {
    fn from(store: Store) -> Self {
        AsyncStore::new(store)
    }
}

impl AsyncStore {
    /// The async handle of `store` (sharing its connections with it and its clones).
    pub fn new(store: Store) -> Self {
        AsyncStore { store }
    }

    /// The sync handle, for code on a thread of its own (it shares this handle's connections).
    /// Calling its operations on a runtime thread blocks that thread.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// [`Store::open`] on the blocking pool.
    ///
    /// # Errors
    /// As [`Store::open`].
    pub async fn open(path: impl AsRef<Path>) -> Result<AsyncStore> {
        AsyncStore::open_with(path, |options| options).await
    }

    /// Opens `path` with the [`OpenOptions`] that `configure` makes of the defaults, on the
    /// blocking pool (where the options are built too: a progress observer need not be `Send`).
    ///
    /// # Errors
    /// As [`OpenOptions::open`].
    ///
    /// # Examples
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use seed_agents_store::AsyncStore;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("agents.sqlite");
    /// let store = AsyncStore::open_with(path, |options| options.read_connections(8)).await?;
    /// assert!(!store.is_read_only());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn open_with(
        path: impl AsRef<Path>,
        configure: impl FnOnce(OpenOptions) -> OpenOptions + Send + 'static,
    ) -> Result<AsyncStore> {
        let path = path.as_ref().to_path_buf();
        let store = blocking(move || configure(Store::options()).open(path)).await?;
        Ok(AsyncStore::new(store))
    }

    /// [`Store::open_read_only`] on the blocking pool.
    ///
    /// # Errors
    /// As [`Store::open_read_only`].
    pub async fn open_read_only(path: impl AsRef<Path>) -> Result<AsyncStore> {
        let path = path.as_ref().to_path_buf();
        let store = blocking(move || Store::open_read_only(path)).await?;
        Ok(AsyncStore::new(store))
    }

    /// Runs `f` with the sync store on the blocking pool and returns its result: for the
    /// operations that take a closure ([`Store::idempotent`], [`Store::continue_session_with`]),
    /// for reads with the generated helpers or the query macros on [`Store::conn`], and for
    /// several steps that belong on one thread.
    ///
    /// # Errors
    /// Whatever `f` returns.
    ///
    /// # Panics
    /// When awaited outside a tokio runtime; a panic in `f` resumes on the awaiting task.
    ///
    /// # Examples
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use seed_agents_store::{schema::accounts, AsyncStore};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let store = AsyncStore::open(dir.path().join("agents.sqlite")).await?;
    /// store.touch_account("acct-1").await?;
    /// let row = store.call(|store| accounts::get(&store.conn()?, "acct-1")).await?;
    /// assert!(row.is_some());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Store) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let store = self.store.clone();
        blocking(move || f(&store)).await
    }

    /// [`Store::is_read_only`] (no I/O: not a future).
    pub fn is_read_only(&self) -> bool {
        self.store.is_read_only()
    }

    /// [`Store::clock`] (no I/O: not a future).
    pub fn clock(&self) -> &Arc<dyn Clock> {
        self.store.clock()
    }

    /// [`Store::now_ms`] (no I/O: not a future).
    pub fn now_ms(&self) -> i64 {
        self.store.now_ms()
    }

    /// [`Store::path`] (no I/O: not a future).
    pub fn path(&self) -> &Path {
        self.store.path()
    }

    /// [`Store::outcome`] (no I/O: not a future).
    pub fn outcome(&self) -> Outcome {
        self.store.outcome()
    }

    /// [`Store::commit_stats`] (no I/O: not a future).
    pub fn commit_stats(&self) -> CommitStats {
        self.store.commit_stats()
    }

    /// [`Store::round_trips`] (no I/O: not a future).
    pub fn round_trips(&self) -> u64 {
        self.store.round_trips()
    }

    /// [`Store::checkpoints`] (no I/O: not a future).
    pub fn checkpoints(&self) -> u64 {
        self.store.checkpoints()
    }

    /// [`Store::select`] as a future. The statement is rendered to SQL when this is called,
    /// on the calling task (no I/O), and run on the blocking pool: a sea-query statement is
    /// neither `Send` nor `Sync`, so the future must not hold it, and is `Send` because it does
    /// not.
    ///
    /// # Errors
    /// As [`Store::select`].
    pub fn select<R: FromRow + Send + 'static>(
        &self,
        statement: &sea_query::SelectStatement,
    ) -> impl Future<Output = Result<Vec<R>>> + Send + 'static {
        let bound = Bound::of(statement);
        let store = self.clone();
        async move {
            let bound = bound?;
            store.call(move |store| store.select_bound(bound)).await
        }
    }
}

async_operations! {
    fn set_durability(durability: Durability) -> ();
    fn table_counts() -> Vec<(&'static str, i64)>;
    fn rotate_key(options: crate::keys::RotateOptions) -> crate::keys::RotationReport;
}

impl AsyncStore {
    /// [`Store::move_key_out`] as a future, on the blocking pool; the target is owned, since it
    /// moves to the pool.
    ///
    /// # Errors
    /// As [`Store::move_key_out`].
    pub async fn move_key_out(
        &self,
        target: Box<dyn crate::keys::KeyProvider>,
    ) -> Result<crate::keys::MoveReport> {
        self.call(move |store| store.move_key_out(&*target)).await
    }
}

/// Runs `f` on the blocking pool. A panic in `f` resumes here, on the awaiting task, as if `f`
/// had run inline: the caller sees the operation's own panic, not an error made up for it.
///
/// # Errors
/// [`Error::RuntimeShutDown`](crate::Error::RuntimeShutDown) when the runtime shut down before
/// `f` started (a blocking task is cancelled only then): `f` never ran. A runtime shutting
/// down (a server stopping, a test's runtime dropped) can still be polling the awaiting task
/// at that moment, so this is an error for the caller, not a panic.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    // On PostgreSQL, a blocking-pool thread drives the store's connections itself.
    #[cfg(feature = "postgres")]
    let f = move || crate::postgres::may_block(f);
    match tokio::task::spawn_blocking(f).await {
        Ok(value) => value,
        Err(e) => match e.try_into_panic() {
            Ok(payload) => std::panic::resume_unwind(payload),
            Err(_) => Err(crate::Error::RuntimeShutDown),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_shareable<T: Clone + Send + Sync + 'static>() {}

    #[test]
    fn the_async_handle_is_cloneable_send_and_sync() {
        assert_shareable::<AsyncStore>();
    }

    /// Each parameter form (`&T`, `&[T]`, `Option<&T>`, by value) and the written-out methods
    /// make `Send` futures, which `tokio::spawn` and axum handlers need. Never polled: building
    /// a future needs no runtime.
    #[test]
    fn the_futures_are_send() {
        fn send<T: Send>(_: T) {}
        let dir = tempfile::tempdir().unwrap();
        let store = AsyncStore::new(Store::open(dir.path().join("s.sqlite")).unwrap());
        let role = crate::schema::account_authorizations::Role::Agent;
        send(store.authorize_signer("a", "s", role, None));
        send(store.append_events("a", "s", &[]));
        let source = crate::waits::DeliverySource::Signal;
        send(store.deliver_signal("a", Some("r"), source, "go", None));
        send(store.record_mcp_discovery("a", "n", Err("down".into())));
        send(store.set_secret("a", "n", b"value", None));
        send(store.verify_webhook_secret("a", "t", "presented"));
        let kind = crate::idempotency::Action::CreateSession;
        send(store.idempotent_replay::<str, String>("a", kind, "c", "request"));
        let statement = sea_query::Query::select().to_owned();
        send(store.select::<crate::schema::runs::Row>(&statement));
    }
}
