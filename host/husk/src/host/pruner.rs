//! The cleaner: prunes ended jobs past their retention, every
//! [`PRUNE_EVERY`] (real time: it paces work; what is old enough to go is
//! decided by the dispatcher's clock), on a store that supports
//! [`Pruning`](crate::store::Pruning).

use std::sync::Arc;
use std::time::Duration;

use super::services::Service;
use crate::dispatch::Dispatcher;
use crate::store::Retention;

/// How often the cleaner prunes ended jobs (see
/// [`HostBuilder::retention`](super::HostBuilder::retention)).
pub const PRUNE_EVERY: Duration = Duration::from_secs(60);

/// Outcomes pruned per store transaction.
pub const PRUNE_BATCH: usize = 1_000;

/// The cleaner of one host.
pub(super) struct Pruner {
    pub(super) dispatcher: Arc<Dispatcher>,
    pub(super) retention: Retention,
    pub(super) every: Duration,
}

impl Service for Pruner {
    const NAME: &'static str = "husk-pruner";

    fn pass(&mut self) -> Duration {
        match self.dispatcher.prune(&self.retention, PRUNE_BATCH) {
            Ok(pruned) if pruned.outcomes > 0 => {
                tracing::info!(outcomes = pruned.outcomes, keys = pruned.keys, "pruned ended jobs");
            }
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "pruning ended jobs failed"),
        }
        self.every
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    use super::{Pruner, Service};
    use crate::clock::ManualClock;
    use crate::dispatch::{Dispatcher, TopicPolicy};
    use crate::outcome::NullSink;
    use crate::sandbox::Ending;
    use crate::store::{FetchRequest, MemoryStore, Retention};

    #[test]
    fn a_pass_prunes_what_retention_no_longer_keeps_and_waits_its_period() {
        let clock = ManualClock::new();
        let dispatcher =
            Dispatcher::new(Arc::new(MemoryStore::new()), Arc::new(clock.clone()), Arc::new(NullSink), None);
        dispatcher.set_topic("t", TopicPolicy::default());
        let id = dispatcher.enqueue("t", b"{}".to_vec()).unwrap();
        let topics = ["t".to_owned()];
        let request = FetchRequest { worker: "w", topics: &topics, max: 1, lock_duration: Duration::from_secs(30) };
        let job = dispatcher
            .fetch_and_lock(request, Duration::ZERO, &AtomicBool::new(false), None, &mut Default::default())
            .unwrap()
            .remove(0);
        dispatcher.report(&job, Ending::Returned(b"1".to_vec()), None).unwrap();
        let retention = Retention::default();
        let mut pruner = Pruner { dispatcher: dispatcher.clone(), retention, every: Duration::from_secs(7) };
        assert_eq!(pruner.pass(), Duration::from_secs(7));
        assert!(dispatcher.store().get(id).unwrap().is_some(), "kept within its retention");
        clock.advance(retention.completed + Duration::from_secs(1));
        pruner.pass();
        assert!(dispatcher.store().get(id).unwrap().is_none(), "pruned past it");
    }
}
