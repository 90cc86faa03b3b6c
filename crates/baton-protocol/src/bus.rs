//! An in-process fan-out of events, for a process that wants to hand what it records to readers
//! in the same process without their reading it back from disk (an MCP server, a status view).
//!
//! Publishing never blocks and never fails: every subscriber has its own unbounded queue, and a
//! subscriber that went away (its [`Subscription`] dropped) is forgotten at the next publish.
//! It is not durable: the logs under `.baton/state/` stay the record, and `baton events` reads
//! them; a bus only saves the in-process reader the wait. Every `baton_state::JsonlLog` publishes
//! its appended lines on `baton_state::appended()`.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Mutex;
use std::time::Duration;

/// A fan-out of `E`s to every current subscriber, in publish order.
#[derive(Debug)]
pub struct EventBus<E> {
    subscribers: Mutex<Vec<Sender<E>>>,
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

impl<E: Clone> EventBus<E> {
    pub fn new() -> Self {
        EventBus::default()
    }

    /// A new subscriber; it gets the events published from now on.
    pub fn subscribe(&self) -> Subscription<E> {
        let (tx, events) = channel();
        self.lock().push(tx);
        Subscription { events }
    }

    /// Hands `event` to every subscriber; forgets those that went away.
    pub fn publish(&self, event: &E) {
        self.lock().retain(|s| s.send(event.clone()).is_ok());
    }

    /// How many subscribers there are (those gone are counted until the next publish).
    pub fn subscribers(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Sender<E>>> {
        // A publisher that panicked holding the lock left the list whole: keep using it.
        self.subscribers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
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
}
