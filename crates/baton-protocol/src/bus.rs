//! An in-process fan-out of events, for a process that wants to hand what it records to readers
//! in the same process without their reading it back from disk (an MCP server, a status view).
//!
//! Publishing never blocks and never fails: every subscriber has its own unbounded queue, and a
//! subscriber that went away (its [`Subscription`] dropped) is forgotten at the next publish.
//! It is not durable: the logs under `.baton/state/` stay the record, and `baton events` reads
//! them; a bus only saves the in-process reader the wait. Every `baton_state::JsonlLog` publishes
//! its appended lines on `baton_state::appended()`.
//!
//! A subscriber that waits on something else too (a file watch) subscribes with a wake call
//! ([`EventBus::subscribe_waking`]): the publisher calls it after each event it queued, so the
//! subscriber can sleep on one poll of both.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Mutex;
use std::time::Duration;

/// A fan-out of `E`s to every current subscriber, in publish order.
pub struct EventBus<E> {
    subscribers: Mutex<Vec<Subscriber<E>>>,
}

/// Called by the publisher after it queued an event for the subscriber.
type WakeCall = Box<dyn Fn() + Send + Sync>;

struct Subscriber<E> {
    events: Sender<E>,
    wake: Option<WakeCall>,
}

impl<E> std::fmt::Debug for EventBus<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventBus")
            .field("subscribers", &self.lock().len())
            .finish()
    }
}

impl<E> Default for EventBus<E> {
    fn default() -> Self {
        EventBus {
            subscribers: Mutex::new(Vec::new()),
        }
    }
}

/// What one subscriber receives: every event published after it subscribed, in order.
#[derive(Debug)]
pub struct Subscription<E> {
    events: Receiver<E>,
}

impl<E> EventBus<E> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Subscriber<E>>> {
        // A publisher that panicked holding the lock left the list whole: keep using it.
        self.subscribers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl<E: Clone> EventBus<E> {
    pub fn new() -> Self {
        EventBus::default()
    }

    /// A new subscriber; it gets the events published from now on.
    pub fn subscribe(&self) -> Subscription<E> {
        self.add(None)
    }

    /// A new subscriber whose `wake` the publisher calls after each event it queued for it
    /// (the event is in the [`Subscription`] by then). `wake` must not block.
    pub fn subscribe_waking(&self, wake: impl Fn() + Send + Sync + 'static) -> Subscription<E> {
        self.add(Some(Box::new(wake)))
    }

    fn add(&self, wake: Option<WakeCall>) -> Subscription<E> {
        let (tx, events) = channel();
        self.lock().push(Subscriber { events: tx, wake });
        Subscription { events }
    }

    /// Hands `event` to every subscriber; forgets those that went away.
    pub fn publish(&self, event: &E) {
        self.lock().retain(|s| {
            let queued = s.events.send(event.clone()).is_ok();
            if let (true, Some(wake)) = (queued, &s.wake) {
                wake();
            }
            queued
        });
    }

    /// How many subscribers there are (those gone are counted until the next publish).
    pub fn subscribers(&self) -> usize {
        self.lock().len()
    }
}

impl<E> Subscription<E> {
    /// The next event, waiting at most `timeout`; `None` when there was none by then or the
    /// bus is gone.
    pub fn next(&self, timeout: Duration) -> Option<E> {
        self.events.recv_timeout(timeout).ok()
    }

    /// The events already published and not yet taken, without waiting.
    pub fn drain(&self) -> Vec<E> {
        self.events.try_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn every_subscriber_gets_what_was_published_after_it_subscribed_in_order() {
        let bus = EventBus::new();
        bus.publish(&0);
        let a = bus.subscribe();
        bus.publish(&1);
        let b = bus.subscribe();
        bus.publish(&2);
        assert_eq!(a.drain(), vec![1, 2]);
        assert_eq!(b.drain(), vec![2]);
        assert_eq!(b.next(Duration::from_millis(1)), None);
        drop(a);
        bus.publish(&3);
        assert_eq!(bus.subscribers(), 1);
        assert_eq!(b.next(Duration::from_secs(1)), Some(3));
    }

    #[test]
    fn a_subscriber_in_another_thread_is_woken_by_a_publish() {
        let bus = std::sync::Arc::new(EventBus::new());
        let sub = bus.subscribe();
        let publisher = std::sync::Arc::clone(&bus);
        let t = std::thread::spawn(move || publisher.publish(&"hello".to_string()));
        assert_eq!(sub.next(Duration::from_secs(10)).as_deref(), Some("hello"));
        t.join().unwrap();
    }

    /// The wake call runs after the event is queued, once per event, and only for its own
    /// subscriber.
    #[test]
    fn a_waking_subscriber_is_called_after_its_event_is_queued() {
        use std::sync::Arc;
        let bus = EventBus::new();
        let slot: Arc<Mutex<Option<Subscription<u32>>>> = Arc::default();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (at_call, s) = (Arc::clone(&slot), Arc::clone(&seen));
        let plain = bus.subscribe();
        let waking = bus.subscribe_waking(move || {
            let drained = at_call.lock().unwrap().as_ref().map(Subscription::drain);
            s.lock().unwrap().push(drained.unwrap_or_default());
        });
        *slot.lock().unwrap() = Some(waking);
        bus.publish(&7);
        bus.publish(&8);
        assert_eq!(*seen.lock().unwrap(), vec![vec![7], vec![8]]);
        assert_eq!(
            plain.drain(),
            vec![7, 8],
            "the plain subscriber is not woken, only fed"
        );
    }
}
