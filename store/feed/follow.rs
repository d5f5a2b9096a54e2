//! Replay then live: what a follower reads, and how it waits for more.
//!
//! Invariant: a follower yields each item after its position exactly once and in order, across
//! the switch from replay to live. It has no separate live channel that could race the replay:
//! it reads the database from its own position every time, and waits only between reads,
//! through a [`Subscription`] whose version it took before the read (see [`super::hub`]). It
//! holds at most one page of items, however far behind it is.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::hub::Subscription;
use crate::error::{Error, Result};
use crate::Store;

/// The most items one read returns: what a follower holds at most.
pub(crate) const PAGE: u32 = 256;

/// What a follower follows: the reads from its position.
pub(crate) trait Source: Send + 'static {
    /// What it yields.
    type Item: Send + 'static;

    /// The items after the position, at most [`PAGE`], the position moved past them: empty when
    /// nothing is new, [`Error::NotFound`] once what is followed is gone.
    fn read(&mut self, store: &Store) -> Result<Vec<Self::Item>>;
}

/// A follower's state, for the blocking iterators and the async streams alike.
#[derive(Debug)]
pub(crate) struct Follow<S: Source> {
    pub(crate) store: Store,
    /// `None` while an async read has it.
    pub(crate) source: Option<S>,
    pub(crate) subscription: Subscription,
    pub(crate) buffer: VecDeque<S::Item>,
    /// What ended the feed (what was followed, and its id), once it has.
    pub(crate) ended: Option<(&'static str, String)>,
}

impl<S: Source> Follow<S> {
    pub(crate) fn new(store: Store, source: S, subscription: Subscription) -> Follow<S> {
        Follow {
            store,
            source: Some(source),
            subscription,
            buffer: VecDeque::new(),
            ended: None,
        }
    }

    /// The error that ends the feed, again for every later call.
    pub(crate) fn end_error(&self) -> Option<Error> {
        self.ended.as_ref().map(|(what, id)| Error::NotFound {
            what,
            id: id.clone(),
        })
    }

    /// Takes the outcome of one read: its items into the buffer, or the end.
    pub(crate) fn take(&mut self, read: Result<Vec<S::Item>>) -> Result<bool> {
        match read {
            Ok(items) => {
                let any = !items.is_empty();
                self.buffer.extend(items);
                Ok(any)
            }
            Err(Error::NotFound { what, id }) => {
                self.ended = Some((what, id.clone()));
                Err(Error::NotFound { what, id })
            }
            Err(e) => Err(e),
        }
    }

    /// The next item, waiting at most `timeout` (`None`: as long as it takes) for one to
    /// commit: `Ok(None)` when none came in time.
    pub(crate) fn next_within(&mut self, timeout: Option<Duration>) -> Result<Option<S::Item>> {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            if let Some(item) = self.buffer.pop_front() {
                return Ok(Some(item));
            }
            if let Some(end) = self.end_error() {
                return Err(end);
            }
            let seen = self.subscription.version();
            let source = self
                .source
                .as_mut()
                .expect("a sync follower keeps its source");
            let read = source.read(&self.store);
            if self.take(read)? {
                continue;
            }
            if self.subscription.wait(seen, deadline) == seen {
                return Ok(None);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::PAGE;
    use crate::agents::NewAgent;
    use crate::payload::{AgentDefinition, Ipld, SessionEventPayload, ToolCallEvent};
    use crate::sessions::NewSession;
    use crate::Store;
    use std::time::Duration;

    /// A follower far behind holds one page, whatever the backlog: the memory policy is that
    /// nothing is queued for a subscriber, which reads from its own position instead.
    #[test]
    fn a_follower_far_behind_holds_at_most_one_page_and_dropping_it_unsubscribes() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("feed.sqlite")).unwrap();
        let agent = store
            .create_agent(
                "a",
                &NewAgent {
                    definition: AgentDefinition::default(),
                    state_dir: "/tmp/a".into(),
                    public_read: false,
                    public_chat: false,
                },
            )
            .unwrap();
        let session = store
            .create_session(
                "a",
                &NewSession {
                    agent_id: agent.id,
                    ..NewSession::default()
                },
            )
            .unwrap();
        let backlog = 3 * PAGE as usize + 5;
        let event: SessionEventPayload =
            ToolCallEvent::new("c", "read", Ipld::String("x".into())).into();
        store
            .append_events("a", &session.id, &vec![event; backlog])
            .unwrap();
        let mut feed = store.follow_events("a", &session.id, 0).unwrap();
        for seq in 1..=backlog as i64 {
            let row = feed.next_within(Duration::ZERO).unwrap().unwrap();
            assert_eq!(row.seq, seq);
            assert!(feed.follow.buffer.len() < PAGE as usize);
        }
        assert!(!store.feed().is_idle());
        drop(feed);
        assert!(store.feed().is_idle());
        assert!(store.feed().topics().is_empty());
    }
}
