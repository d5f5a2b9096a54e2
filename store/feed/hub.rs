//! The in-process side of the feed: one signal per topic somebody waits on, bumped after the
//! commit of a write that touched it.
//!
//! Invariant: a wake-up is never lost. A subscriber reads the signal's version before it reads
//! the database and waits only while the version is still the one it read; a writer bumps the
//! version after its commit. So either the read saw the commit, or the wait returns at once.
//! The hub holds no event: a subscriber re-reads from its own position, which is what keeps a
//! slow subscriber from making anything buffer.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, RwLock, Weak};
use std::task::Waker;
use std::time::Instant;

use super::topic::Topic;

/// The signals of one store, shared by its clones.
#[derive(Debug, Default)]
pub(crate) struct Hub {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Read by every commit that publishes, written only when a topic gains its first
    /// subscriber: publishers never wait for each other.
    topics: RwLock<HashMap<Topic, Weak<Signal>>>,
    /// Live subscriptions: publishing with none costs one atomic read.
    subscriptions: AtomicUsize,
    /// Ids for the wakers of async waits.
    next_waiter: AtomicU64,
    /// Whether the thread that sees other processes' or nodes' commits runs.
    pub(super) watching: AtomicBool,
}

/// One topic's version and who waits for it to move.
#[derive(Debug, Default)]
struct Signal {
    state: Mutex<State>,
    moved: Condvar,
}

#[derive(Debug, Default)]
struct State {
    version: u64,
    /// Async waits, by waiter id: one entry per waiter however often it polls.
    wakers: HashMap<u64, Waker>,
}

impl Signal {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn bump(&self) {
        let mut state = self.state();
        state.version += 1;
        let wakers = std::mem::take(&mut state.wakers);
        drop(state);
        self.moved.notify_all();
        wakers.into_values().for_each(Waker::wake);
    }
}

impl Hub {
    /// Starts waiting on `topic`: the returned subscription sees every bump from now on.
    pub(crate) fn subscribe(&self, topic: Topic) -> Subscription {
        let mut topics = self.inner.write();
        let signal = match topics.get(&topic).and_then(Weak::upgrade) {
            Some(signal) => signal,
            None => {
                // Forget the topics nobody waits on any more before adding one.
                topics.retain(|_, signal| signal.strong_count() > 0);
                let signal = Arc::new(Signal::default());
                topics.insert(topic.clone(), Arc::downgrade(&signal));
                signal
            }
        };
        self.inner.subscriptions.fetch_add(1, Ordering::SeqCst);
        Subscription {
            hub: self.inner.clone(),
            signal,
            waiter: self.inner.next_waiter.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// Wakes the subscribers of `topics` (their writes have committed).
    pub(crate) fn publish<'t>(&self, topics: impl IntoIterator<Item = &'t Topic>) {
        if self.inner.subscriptions.load(Ordering::SeqCst) == 0 {
            return;
        }
        let signals: Vec<_> = {
            let map = self.inner.read();
            let mut signals = Vec::new();
            for topic in topics {
                if *topic == Topic::Sessions {
                    let every = map.iter().filter(|(t, _)| matches!(t, Topic::Session(_)));
                    signals.extend(every.filter_map(|(_, signal)| signal.upgrade()));
                } else {
                    signals.extend(map.get(topic).and_then(Weak::upgrade));
                }
            }
            signals
        };
        signals.iter().for_each(|signal| signal.bump());
    }

    /// The topics somebody waits on now.
    pub(crate) fn topics(&self) -> Vec<Topic> {
        let map = self.inner.read();
        map.iter()
            .filter(|(_, signal)| signal.strong_count() > 0)
            .map(|(topic, _)| topic.clone())
            .collect()
    }

    /// Whether nobody waits on anything.
    pub(crate) fn is_idle(&self) -> bool {
        self.inner.subscriptions.load(Ordering::SeqCst) == 0
    }

    /// Marks the watcher as started; `false` when it already runs.
    pub(crate) fn start_watching(&self) -> bool {
        !self.inner.watching.swap(true, Ordering::SeqCst)
    }

    /// Marks the watcher as stopped; `false` when a subscription came meanwhile, so it goes on.
    pub(crate) fn stop_watching(&self) -> bool {
        self.inner.watching.store(false, Ordering::SeqCst);
        if self.is_idle() {
            return true;
        }
        // Somebody subscribed after the watcher saw none: keep watching, unless another
        // watcher has started for them already.
        !self.start_watching()
    }

    /// A handle on the same hub, for the watcher thread.
    pub(crate) fn share(&self) -> Hub {
        Hub {
            inner: self.inner.clone(),
        }
    }
}

impl Inner {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<Topic, Weak<Signal>>> {
        self.topics.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<Topic, Weak<Signal>>> {
        self.topics.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A subscriber's hold on one topic: dropping it unsubscribes.
#[derive(Debug)]
pub(crate) struct Subscription {
    hub: Arc<Inner>,
    signal: Arc<Signal>,
    waiter: u64,
}

impl Subscription {
    /// The topic's version now: read it before reading the database.
    pub(crate) fn version(&self) -> u64 {
        self.signal.state().version
    }

    /// Waits until the version is no longer `seen`, or until `deadline`. Returns the version
    /// then (still `seen` when the deadline passed first).
    pub(crate) fn wait(&self, seen: u64, deadline: Option<Instant>) -> u64 {
        let mut state = self.signal.state();
        while state.version == seen {
            match deadline {
                None => {
                    state = self
                        .signal
                        .moved
                        .wait(state)
                        .unwrap_or_else(PoisonError::into_inner)
                }
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    state = self
                        .signal
                        .moved
                        .wait_timeout(state, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
            }
        }
        state.version
    }

    #[cfg(feature = "tokio")]
    /// Ready with the version once it is no longer `seen`; otherwise wakes `cx` when it moves.
    pub(crate) fn poll_moved(
        &self,
        seen: u64,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<u64> {
        use std::task::Poll;
        let mut state = self.signal.state();
        if state.version != seen {
            state.wakers.remove(&self.waiter);
            return Poll::Ready(state.version);
        }
        state.wakers.insert(self.waiter, cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.signal.state().wakers.remove(&self.waiter);
        self.hub.subscriptions.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_bump_after_the_version_was_read_ends_the_wait() {
        let hub = Hub::default();
        let sub = hub.subscribe(Topic::Runs);
        let seen = sub.version();
        hub.publish([&Topic::Session("other".into())]);
        let deadline = Instant::now() + Duration::from_millis(20);
        assert_eq!(sub.wait(seen, Some(deadline)), seen, "another topic's bump");
        hub.publish([&Topic::Runs]);
        assert_eq!(sub.wait(seen, None), seen + 1);
    }

    #[test]
    fn a_waiting_thread_wakes_on_publish_and_dropping_unsubscribes() {
        let hub = Hub::default();
        let sub = hub.subscribe(Topic::RunTree("r".into()));
        let seen = sub.version();
        let publisher = hub.share();
        let thread = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            publisher.publish([&Topic::RunTree("r".into())]);
        });
        assert_eq!(sub.wait(seen, None), seen + 1);
        thread.join().unwrap();
        assert_eq!(hub.topics(), vec![Topic::RunTree("r".into())]);
        drop(sub);
        assert!(hub.is_idle());
        assert!(hub.topics().is_empty());
    }

    #[cfg(feature = "tokio")]
    #[test]
    fn an_async_wait_keeps_one_waker_however_often_it_polls() {
        use std::task::{Context, Poll};
        struct Count(AtomicUsize);
        impl std::task::Wake for Count {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let hub = Hub::default();
        let sub = hub.subscribe(Topic::Runs);
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        let mut cx = Context::from_waker(&waker);
        let seen = sub.version();
        for _ in 0..100 {
            assert!(sub.poll_moved(seen, &mut cx).is_pending());
        }
        assert_eq!(sub.signal.state().wakers.len(), 1);
        hub.publish([&Topic::Runs]);
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert_eq!(sub.poll_moved(seen, &mut cx), Poll::Ready(seen + 1));
    }
}
