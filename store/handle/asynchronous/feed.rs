//! The change feed for async code: [`EventStream`], [`JournalStream`] and [`AsyncRunWaiter`].
//!
//! Invariant: a stream is the sync follower ([`crate::feed`]) driven by polls: its reads run on
//! the blocking pool, its waits register the task's waker with the topic's signal and hold no
//! thread. Dropping a stream unsubscribes (an in-flight read finishes and is dropped).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::Stream;

use super::blocking;
use crate::error::Result;
use crate::feed::follow::{Follow, Source};
use crate::feed::{JournalFeed, RunWaiter, TreeEntry};
use crate::schema::session_events;
use crate::AsyncStore;

type Reading<S> =
    Pin<Box<dyn Future<Output = Result<(S, Result<Vec<<S as Source>::Item>>)>> + Send>>;

/// A follower polled from a task.
struct Polled<S: Source> {
    follow: Follow<S>,
    reading: Option<Reading<S>>,
    /// The topic's version before the last read that found nothing: wait until it moves.
    waiting: Option<u64>,
    /// Set once the end was yielded: the stream is then done.
    done: bool,
}

impl<S: Source> Polled<S> {
    fn new(follow: Follow<S>) -> Polled<S> {
        Polled {
            follow,
            reading: None,
            waiting: None,
            done: false,
        }
    }

    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<S::Item>>> {
        loop {
            if let Some(item) = self.follow.buffer.pop_front() {
                return Poll::Ready(Some(Ok(item)));
            }
            if self.done {
                return Poll::Ready(None);
            }
            if let Some(end) = self.follow.end_error() {
                self.done = true;
                return Poll::Ready(Some(Err(end)));
            }
            if let Some(reading) = self.reading.as_mut() {
                let (source, read) = match reading.as_mut().poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Ok(done)) => done,
                    Poll::Ready(Err(e)) => {
                        self.done = true;
                        return Poll::Ready(Some(Err(e)));
                    }
                };
                self.reading = None;
                self.follow.source = Some(source);
                let seen = self.waiting.take().unwrap_or_default();
                match self.follow.take(read) {
                    Ok(true) => continue,
                    Ok(false) => self.waiting = Some(seen),
                    Err(e) if self.follow.ended.is_some() => {
                        self.done = true;
                        return Poll::Ready(Some(Err(e)));
                    }
                    Err(e) => return Poll::Ready(Some(Err(e))),
                }
            }
            if let Some(seen) = self.waiting {
                match self.follow.subscription.poll_moved(seen, cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(_) => self.waiting = None,
                }
            }
            // Read from the position, the version taken first (see `crate::feed::hub`).
            self.waiting = Some(self.follow.subscription.version());
            let mut source = self.follow.source.take().expect("no read in flight");
            let store = self.follow.store.clone();
            self.reading = Some(Box::pin(blocking(move || {
                let read = source.read(&store);
                Ok((source, read))
            })));
        }
    }
}

/// [`crate::feed::EventFeed`] as a [`Stream`]: from [`AsyncStore::follow_events`]. It never
/// ends on its own while the session lives (wrap a wait in a timeout to bound it); when the
/// session is deleted it yields [`crate::Error::NotFound`] and ends.
pub struct EventStream(Polled<crate::feed::sessions::Events>);

impl Stream for EventStream {
    type Item = Result<session_events::Row>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().0.poll_next(cx)
    }
}

impl std::fmt::Debug for EventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventStream").finish_non_exhaustive()
    }
}

/// [`JournalFeed`] as a [`Stream`]: from [`AsyncStore::follow_journal`].
pub struct JournalStream(Polled<crate::feed::journals::Journals>);

impl Stream for JournalStream {
    type Item = Result<TreeEntry>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().0.poll_next(cx)
    }
}

impl std::fmt::Debug for JournalStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JournalStream").finish_non_exhaustive()
    }
}

/// [`RunWaiter`] for async code: from [`AsyncStore::run_waiter`].
#[derive(Debug)]
pub struct AsyncRunWaiter(RunWaiter);

impl AsyncRunWaiter {
    /// [`RunWaiter::wait`] as a future: it holds no thread while it waits.
    ///
    /// # Errors
    /// As [`RunWaiter::wait`].
    pub async fn wait(&mut self, timeout: Duration) -> Result<bool> {
        let deadline = tokio::time::Instant::now() + timeout;
        if self.0.look() {
            return Ok(true);
        }
        let store = self.0.store.clone();
        let due = blocking(move || crate::feed::runs::next_due(&store)).await?;
        let (now, now_ms) = (tokio::time::Instant::now(), self.0.store.now_ms());
        let due =
            due.map(|at| now + Duration::from_millis(at.saturating_sub(now_ms).max(0) as u64));
        let until = due.map_or(deadline, |due| due.min(deadline));
        let seen = self.0.seen;
        let subscription = &self.0.subscription;
        let moved = tokio::time::timeout_at(
            until,
            std::future::poll_fn(|cx| subscription.poll_moved(seen, cx)),
        )
        .await;
        Ok(match moved {
            Ok(version) => {
                self.0.seen = version;
                true
            }
            Err(_) => due.is_some_and(|due| due <= tokio::time::Instant::now()),
        })
    }
}

impl AsyncStore {
    /// [`crate::Store::follow_events`] as a [`Stream`] (set up on the blocking pool): the
    /// same items, in the same order, with the same end.
    ///
    /// # Errors
    /// As [`crate::Store::follow_events`].
    pub async fn follow_events(
        &self,
        account_id: &str,
        session_id: &str,
        after_seq: i64,
    ) -> Result<EventStream> {
        let (account, session) = (account_id.to_owned(), session_id.to_owned());
        let feed = self
            .call(move |store| store.follow_events(&account, &session, after_seq))
            .await?;
        Ok(EventStream(Polled::new(feed.follow)))
    }

    /// [`crate::Store::follow_journal`] as a [`Stream`] (set up on the blocking pool).
    ///
    /// # Errors
    /// As [`crate::Store::follow_journal`].
    pub async fn follow_journal(
        &self,
        account_id: &str,
        root_run_id: &str,
    ) -> Result<JournalStream> {
        let (account, root) = (account_id.to_owned(), root_run_id.to_owned());
        let feed: JournalFeed = self
            .call(move |store| store.follow_journal(&account, &root))
            .await?;
        Ok(JournalStream(Polled::new(feed.follow)))
    }

    /// [`crate::Store::run_waiter`] for async code.
    ///
    /// # Errors
    /// As [`crate::Store::run_waiter`].
    pub async fn run_waiter(&self) -> Result<AsyncRunWaiter> {
        Ok(AsyncRunWaiter(self.call(|store| store.run_waiter()).await?))
    }
}
