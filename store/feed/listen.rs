//! Seeing other nodes' commits on PostgreSQL: one listening connection per store.
//!
//! Invariant: every notification the store's writes send (`pg_notify` in the writing
//! transaction, see [`crate::Db::notify`]) after [`start`] returned reaches the hub. `LISTEN`
//! is in place before the first subscriber reads. A connection that drops is opened again,
//! and then every topic is woken, since notifications sent meanwhile were lost.

use std::collections::BTreeSet;
use std::sync::mpsc;
use std::time::Duration;

use futures_util::StreamExt;
use tokio_postgres::AsyncMessage;

use super::hub::Hub;
use super::topic::{Topic, CHANNEL};
use crate::error::{Error, Result};
use crate::handle::WeakStore;
use crate::postgres::Pool;
use crate::Store;

/// How often an idle listener checks whether its store and subscribers are still there, and
/// how long it waits before opening a dropped connection again.
const PATIENCE: Duration = Duration::from_millis(250);

/// Starts the listener unless it runs; `LISTEN` is in place when this returns.
pub(crate) fn start(store: &Store, pool: &Pool) -> Result<()> {
    let hub = store.feed();
    if !hub.start_watching() {
        return Ok(());
    }
    let (config, name) = (pool.config().clone(), pool.name().to_owned());
    let (weak, shared) = (store.downgrade(), hub.share());
    let (ready, listening) = mpsc::sync_channel(1);
    let thread_name = name.clone();
    let spawned = std::thread::Builder::new()
        .name("seed-agents-listen".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            match runtime {
                Ok(runtime) => runtime.block_on(listen(config, thread_name, weak, shared, ready)),
                Err(source) => {
                    let _ = ready.send(Err(Error::Io {
                        path: thread_name.into(),
                        source,
                    }));
                }
            }
        });
    let outcome = match spawned {
        Ok(_) => listening.recv().unwrap_or_else(|_| {
            Err(Error::Io {
                path: name.clone().into(),
                source: std::io::Error::other("the listening thread ended before it listened"),
            })
        }),
        Err(source) => Err(Error::Io {
            path: name.into(),
            source,
        }),
    };
    if outcome.is_err() {
        hub.stop_watching();
    }
    outcome
}

/// Listens until the store is dropped or nobody follows anything, opening the connection
/// again when it drops.
async fn listen(
    config: tokio_postgres::Config,
    name: String,
    weak: WeakStore,
    hub: Hub,
    ready: mpsc::SyncSender<Result<()>>,
) {
    let mut ready = Some(ready);
    loop {
        match connect(&config, &name).await {
            Ok((client, mut notifications)) => {
                match ready.take() {
                    Some(ready) => {
                        let _ = ready.send(Ok(()));
                    }
                    // What was sent while the connection was down is lost: everybody looks.
                    None => hub.publish(hub.topics().iter()),
                }
                if !relay(&mut notifications, &weak, &hub).await {
                    return;
                }
                drop(client);
            }
            Err(e) => {
                if let Some(ready) = ready.take() {
                    let _ = ready.send(Err(e));
                    return;
                }
            }
        }
        tokio::time::sleep(PATIENCE).await;
        if !wanted(&weak, &hub) {
            return;
        }
    }
}

/// Whether the listener is still wanted: its store is open and somebody follows something.
fn wanted(weak: &WeakStore, hub: &Hub) -> bool {
    if weak.upgrade().is_none() {
        hub.stop_watching();
        return false;
    }
    !(hub.is_idle() && hub.stop_watching())
}

type Notifications = tokio::sync::mpsc::UnboundedReceiver<String>;

/// A connection that listens on [`CHANNEL`], and the payloads it receives.
async fn connect(
    config: &tokio_postgres::Config,
    name: &str,
) -> Result<(tokio_postgres::Client, Notifications)> {
    let fail = |source| Error::Postgres {
        database: name.to_owned(),
        source,
    };
    let (client, mut connection) = config.connect(tokio_postgres::NoTls).await.map_err(fail)?;
    let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(|cx| connection.poll_message(cx));
        while let Some(Ok(message)) = messages.next().await {
            if let AsyncMessage::Notification(n) = message {
                if sender.send(n.payload().to_owned()).is_err() {
                    return;
                }
            }
        }
        // The connection ended: dropping `sender` tells the relay.
    });
    client
        .batch_execute(&format!("LISTEN {CHANNEL}"))
        .await
        .map_err(fail)?;
    Ok((client, receiver))
}

/// Hands notifications to the hub until the connection drops (`true`: open it again) or the
/// listener is no longer wanted (`false`).
async fn relay(notifications: &mut Notifications, weak: &WeakStore, hub: &Hub) -> bool {
    loop {
        match tokio::time::timeout(PATIENCE, notifications.recv()).await {
            Ok(Some(first)) => {
                // Everything already here, each topic woken once.
                let mut topics = BTreeSet::new();
                topics.extend(Topic::parse(&first));
                while let Ok(more) = notifications.try_recv() {
                    topics.extend(Topic::parse(&more));
                }
                hub.publish(topics.iter());
            }
            Ok(None) => return true,
            Err(_) => {
                if !wanted(weak, hub) {
                    return false;
                }
            }
        }
    }
}
