//! Who to wake when jobs may have become fetchable: a fetcher of one topic
//! sleeps on that topic's [`Notifier`], so an enqueue wakes its topic's
//! fetchers only, not every worker of every topic (each woken fetcher costs
//! a store query). What concerns every topic — the clock moved by hand, a
//! shutdown, a re-arm or release, permits given back, another process's
//! notification — wakes all of them.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::RwLock;

use crate::clock::{Clock, Notifier};

/// The notifiers of a dispatcher's fetchers, by topic.
#[derive(Debug)]
pub(super) struct Wakers {
    /// For fetchers of several topics at once (woken by every wake).
    any: Arc<Notifier>,
    /// One per topic a fetcher has waited on.
    topics: RwLock<HashMap<String, Arc<Notifier>>>,
    clock: Arc<dyn Clock>,
}

impl Wakers {
    pub(super) fn new(clock: Arc<dyn Clock>) -> Self {
        let any = Notifier::new();
        clock.subscribe(&any);
        Self { any, topics: RwLock::new(HashMap::new()), clock }
    }

    /// The notifier a fetch of `topics` waits on.
    pub(super) fn for_fetch(&self, topics: &[String]) -> Arc<Notifier> {
        let [topic] = topics else { return self.any.clone() };
        if let Some(notifier) = self.topics.read().get(topic) {
            return notifier.clone();
        }
        self.topics
            .write()
            .entry(topic.clone())
            .or_insert_with(|| {
                let notifier = Notifier::new();
                self.clock.subscribe(&notifier);
                notifier
            })
            .clone()
    }

    /// Wakes the fetchers of `topic` (and those of several topics).
    pub(super) fn topic(&self, topic: &str) {
        if let Some(notifier) = self.topics.read().get(topic) {
            notifier.notify();
        }
        self.any.notify();
    }

    /// Wakes every fetcher.
    pub(super) fn all(&self) {
        for notifier in self.topics.read().values() {
            notifier.notify();
        }
        self.any.notify();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::Wakers;
    use crate::clock::{Clock, ManualClock};

    #[test]
    fn a_topics_wake_reaches_its_fetchers_and_not_another_topics() {
        let clock = ManualClock::new();
        let wakers = Wakers::new(Arc::new(clock.clone()) as Arc<dyn Clock>);
        let (a, b) = (["a".to_owned()], ["b".to_owned()]);
        let (on_a, on_b, on_both) =
            (wakers.for_fetch(&a), wakers.for_fetch(&b), wakers.for_fetch(&["a".into(), "b".into()]));
        assert!(Arc::ptr_eq(&on_a, &wakers.for_fetch(&a)), "one notifier per topic");
        let seen = |n: &crate::clock::Notifier| n.generation();
        let (a0, b0, both0) = (seen(&on_a), seen(&on_b), seen(&on_both));
        wakers.topic("a");
        assert_ne!(seen(&on_a), a0);
        assert_eq!(seen(&on_b), b0, "b's fetchers sleep on");
        assert_ne!(seen(&on_both), both0, "a fetcher of a and b wakes");
        let (a1, b1) = (seen(&on_a), seen(&on_b));
        wakers.all();
        assert!(seen(&on_a) != a1 && seen(&on_b) != b1);
        let b2 = seen(&on_b);
        clock.advance(std::time::Duration::from_secs(1));
        assert_ne!(seen(&on_b), b2, "the clock moved by hand wakes a topic's fetchers");
    }
}
