//! Following a session's log: [`EventFeed`].
//!
//! Invariant: a feed is scoped to its account like every read (another account's session is
//! not found), and ends with [`Error::NotFound`] once its session is deleted, never hangs.

use std::time::Duration;

use super::follow::{Follow, Source, PAGE};
use crate::error::{Error, Result};
use crate::schema::{session_events, sessions};
use crate::Store;

/// The reads of one session's log from a seq.
#[derive(Debug)]
pub(crate) struct Events {
    pub(crate) account: String,
    pub(crate) session: String,
    pub(crate) after: i64,
}

impl Source for Events {
    type Item = session_events::Row;

    fn read(&mut self, store: &Store) -> Result<Vec<session_events::Row>> {
        let rows = store.events_after(&self.account, &self.session, self.after, Some(PAGE))?;
        if let Some(last) = rows.last() {
            self.after = last.seq;
        } else if sessions::get(&store.reading()?, &self.account, &self.session)?.is_none() {
            // Nothing new, and `events_after` cannot tell a gone session from a quiet one.
            return Err(Error::NotFound {
                what: "session",
                id: self.session.clone(),
            });
        }
        Ok(rows)
    }
}

/// A session's events after a seq, then each new one as it commits: from
/// [`Store::follow_events`].
///
/// As an [`Iterator`] it yields each event once, in seq order, and `None` when
/// [`EventFeed::timeout`] passes with nothing new (iterate again to wait more). When the session
/// is deleted it yields [`Error::NotFound`] once and then ends. A slow reader makes nothing
/// buffer: the feed reads from its own position, a page at a time.
///
/// ```
/// use std::time::Duration;
/// use seed_agents_store::payload::{Ipld, SessionEventPayload, ToolCallEvent};
/// # use seed_agents_store::{agents::NewAgent, payload::AgentDefinition, sessions::NewSession, Store};
/// # let dir = tempfile::tempdir()?;
/// # let store = Store::open(dir.path().join("agents.sqlite"))?;
/// # let agent = store.create_agent("acct-1", &NewAgent {
/// #     definition: AgentDefinition::default(), state_dir: "/tmp/a".into(),
/// #     public_read: false, public_chat: false })?;
/// # let session = store.create_session("acct-1", &NewSession {
/// #     agent_id: agent.id, ..NewSession::default() })?;
/// let event = || -> SessionEventPayload {
///     ToolCallEvent::new("call-1", "read", Ipld::String("notes.md".into())).into()
/// };
/// store.append_event("acct-1", &session.id, &event())?;
/// let mut feed = store
///     .follow_events("acct-1", &session.id, 0)?
///     .timeout(Duration::from_secs(5));
/// let writer = store.clone();
/// let id = session.id.clone();
/// std::thread::spawn(move || writer.append_event("acct-1", &id, &event()));
/// // The event appended before, then the one appended after, as it commits.
/// assert_eq!(feed.next().transpose()?.map(|e| e.seq), Some(1));
/// assert_eq!(feed.next().transpose()?.map(|e| e.seq), Some(2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct EventFeed {
    pub(crate) follow: Follow<Events>,
    timeout: Option<Duration>,
}

impl EventFeed {
    pub(crate) fn new(follow: Follow<Events>) -> EventFeed {
        EventFeed {
            follow,
            timeout: None,
        }
    }

    /// How long each [`Iterator::next`] waits for a new event (by default, as long as it takes).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> EventFeed {
        self.timeout = Some(timeout);
        self
    }

    /// The next event, waiting at most `timeout` for one to commit: `Ok(None)` when none came.
    ///
    /// # Errors
    /// [`Error::NotFound`] (`session`) once the session is deleted, and for every call after;
    /// a read's error otherwise (the feed stays where it was, so calling again retries).
    pub fn next_within(&mut self, timeout: Duration) -> Result<Option<session_events::Row>> {
        self.follow.next_within(Some(timeout))
    }

    /// The seq of the last event read from the store (handed out or still held): the
    /// `after_seq` to follow again from without a gap.
    pub fn position(&self) -> i64 {
        match (self.follow.buffer.front(), &self.follow.source) {
            (Some(first), _) => first.seq - 1,
            (None, Some(source)) => source.after,
            (None, None) => 0,
        }
    }
}

impl Iterator for EventFeed {
    type Item = Result<session_events::Row>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.follow.ended.is_some() && self.follow.buffer.is_empty() {
            return None;
        }
        self.follow.next_within(self.timeout).transpose()
    }
}
