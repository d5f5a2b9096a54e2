//! Seeing other processes' commits to the same SQLite file: one watcher thread per store.
//!
//! Invariant: a commit by another process wakes every follower whose topic it changed, within
//! about one [`TICK`] (plus a batch, when the writer is busy). The watcher asks the store's
//! writer connection for `PRAGMA data_version`, which moves only when another connection
//! committed (never for the writer's own commits, which the write frame publishes itself). It
//! never waits for the writer: when a batch is open, the batch's closer reads the version
//! after its commit for the next look. Its first value is read before the
//! first subscriber reads anything, so no commit falls between the two. When it moves, the
//! watcher reads the head of each followed topic and wakes the topics whose head moved.
//!
//! Idle, it costs one `PRAGMA data_version` per tick (measured in `benches/feed.rs`), and it
//! stops when nobody follows anything or the store is dropped.

use std::collections::HashMap;
use std::time::Duration;

use super::hub::Hub;
use super::topic::Topic;
use crate::error::Result;
use crate::handle::WeakStore;
use crate::sqlite::commit::read_version;
use crate::{query, Store};

/// How often the watcher looks for other processes' commits.
pub(crate) const TICK: Duration = Duration::from_millis(5);

/// Starts the watcher unless it runs; its first look happens before this returns.
pub(crate) fn start(store: &Store) -> Result<()> {
    let hub = store.feed();
    if !hub.start_watching() {
        return Ok(());
    }
    // The first look waits for the writer, so that no commit falls between it and the first
    // read of the subscriber that started the watcher.
    let first = match store
        .sqlite_writer()
        .and_then(|w| Ok(w.between_batches(read_version)?))
    {
        Ok(version) => version,
        Err(e) => {
            hub.stop_watching();
            return Err(e);
        }
    };
    let (weak, hub) = (store.downgrade(), hub.share());
    let spawned = std::thread::Builder::new()
        .name("seed-agents-feed".into())
        .spawn(move || watch(weak, hub, first));
    if let Err(source) = spawned {
        store.feed().stop_watching();
        return Err(crate::Error::Io {
            path: store.path().to_path_buf(),
            source,
        });
    }
    Ok(())
}

/// What a topic's head was when the watcher last read it.
type Head = Option<(i64, i64)>;

fn watch(weak: WeakStore, hub: Hub, mut last: i64) {
    let mut heads: HashMap<Topic, Head> = HashMap::new();
    loop {
        std::thread::sleep(TICK);
        let Some(store) = weak.upgrade() else {
            hub.stop_watching();
            return;
        };
        if hub.is_idle() && hub.stop_watching() {
            return;
        }
        // A failed look (a busy file, say) is tried again next tick; a busy writer answers
        // with the version its last commit read, and reads it again at its next.
        let Ok(Some(version)) = store.sqlite_writer().and_then(|w| Ok(w.data_version()?)) else {
            continue;
        };
        if version == last {
            continue;
        }
        last = version;
        let topics = hub.topics();
        heads.retain(|topic, _| topics.contains(topic));
        let mut moved = Vec::new();
        for topic in topics {
            // No head, or an unknown one: its followers read for themselves.
            let Ok(Some(now)) = head(&store, &topic) else {
                moved.push(topic);
                continue;
            };
            if heads.insert(topic.clone(), now) != Some(now) {
                moved.push(topic);
            }
        }
        hub.publish(moved.iter());
    }
}

/// What changes when something is appended under `topic`: a session's last seq (`None` once
/// it is deleted), a tree's runs and the sum of their last seqs. The queue has no head
/// (`Ok(None)`): any foreign commit may have changed it.
fn head(store: &Store, topic: &Topic) -> Result<Option<Head>> {
    let reading = store.reading()?;
    Ok(Some(match topic {
        Topic::Session(id) => query!(
            "SELECT CAST(COALESCE((SELECT MAX(e.seq) FROM session_events e WHERE e.session_id = s.id), 0) AS INTEGER) AS \"head!\" FROM sessions s WHERE s.id = ?1",
            id
        )
        .fetch_optional(&reading)?
        .map(|row| (row.head, 0)),
        Topic::RunTree(root) => {
            let row = query!(
                "SELECT CAST(COUNT(*) AS INTEGER) AS \"members!\", CAST(COALESCE(SUM((SELECT MAX(j.seq) FROM run_journal j WHERE j.run_id = r.id)), 0) AS INTEGER) AS \"entries!\" FROM runs r INDEXED BY runs_by_root WHERE r.root_run_id = ?1",
                root
            )
            .fetch_one(&reading)?;
            Some((row.members, row.entries))
        }
        Topic::Runs | Topic::Sessions => return Ok(None),
    }))
}
