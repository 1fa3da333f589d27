//! Counters of what the dispatcher did, and the snapshot status reads come
//! from (published, never read from the store's critical section).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use serde::Serialize;

use crate::fault::codes;
use crate::outcome::Outcome;
use crate::store::{Depth, StoreError};

/// The reserved codes of limit kills and traps, in a fixed order.
const KILL_CODES: [&str; 7] = [
    codes::TIMEOUT,
    codes::OUT_OF_FUEL,
    codes::MEMORY_LIMIT,
    codes::STACK_OVERFLOW,
    codes::TRAP,
    codes::OUTPUT_TOO_LARGE,
    codes::HOST_ERROR,
];

/// Running totals, updated with atomics on the reporting threads.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    enqueued: AtomicU64,
    completed: AtomicU64,
    business_errors: AtomicU64,
    business_statuses: AtomicU64,
    failed: AtomicU64,
    cancelled: AtomicU64,
    retries: AtomicU64,
    reports_dropped: AtomicU64,
    kills: [AtomicU64; KILL_CODES.len()],
    pruned_outcomes: AtomicU64,
    pruned_keys: AtomicU64,
}

impl Counters {
    pub(crate) fn enqueued(&self, n: u64) {
        // Release: whoever reads the new count (Acquire) also sees the
        // store's write it follows.
        self.enqueued.fetch_add(n, Ordering::Release);
    }

    /// The enqueue count (see [`Dispatcher::enqueued`](super::Dispatcher::enqueued)).
    pub(crate) fn enqueued_so_far(&self) -> u64 {
        self.enqueued.load(Ordering::Acquire)
    }

    pub(crate) fn ended(&self, outcome: &Outcome) {
        let counter = match outcome {
            Outcome::Completed { .. } => &self.completed,
            Outcome::BusinessError { .. } => &self.business_errors,
            Outcome::BusinessStatus { .. } => &self.business_statuses,
            Outcome::Failed { .. } => &self.failed,
            Outcome::Cancelled => &self.cancelled,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn retried(&self) {
        self.retries.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn report_dropped(&self) {
        self.reports_dropped.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn killed(&self, code: &str) {
        if let Some(i) = KILL_CODES.iter().position(|c| *c == code) {
            self.kills[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn pruned(&self, pruned: crate::store::Pruned) {
        self.pruned_outcomes.fetch_add(pruned.outcomes, Ordering::Relaxed);
        self.pruned_keys.fetch_add(pruned.keys, Ordering::Relaxed);
    }

    pub(crate) fn totals(&self) -> Totals {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Totals {
            enqueued: self.enqueued_so_far(),
            completed: load(&self.completed),
            business_errors: load(&self.business_errors),
            business_statuses: load(&self.business_statuses),
            failed: load(&self.failed),
            cancelled: load(&self.cancelled),
            retries: load(&self.retries),
            reports_dropped: load(&self.reports_dropped),
            kills: KILL_CODES.iter().zip(&self.kills).map(|(code, n)| ((*code).to_owned(), load(n))).collect(),
            pruned_outcomes: load(&self.pruned_outcomes),
            pruned_keys: load(&self.pruned_keys),
        }
    }
}

/// Totals since the dispatcher started.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    /// Jobs enqueued.
    pub enqueued: u64,
    /// Jobs ended `Completed`.
    pub completed: u64,
    /// Jobs ended with a business error.
    pub business_errors: u64,
    /// Jobs ended with a business status.
    pub business_statuses: u64,
    /// Jobs ended `Failed` (incidents).
    pub failed: u64,
    /// Jobs ended `Cancelled`.
    pub cancelled: u64,
    /// Technical faults retried (re-arms).
    pub retries: u64,
    /// Reports dropped because the reporter's lock had expired.
    pub reports_dropped: u64,
    /// Ended jobs' outcomes this process's cleaner pruned.
    pub pruned_outcomes: u64,
    /// Idempotency keys this process's cleaner pruned.
    pub pruned_keys: u64,
    /// Attempts killed or trapped, by reserved fault code.
    pub kills: BTreeMap<String, u64>,
}

impl Totals {
    /// Jobs that reached a terminal outcome.
    pub fn ended(&self) -> u64 {
        self.completed + self.business_errors + self.business_statuses + self.failed + self.cancelled
    }
}

/// A published view of the dispatcher for status reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Snapshot {
    /// When it was taken.
    #[serde(with = "crate::wire::epoch_millis")]
    pub taken_at: SystemTime,
    /// Totals at that time.
    pub totals: Totals,
    /// Live jobs per topic.
    pub depths: BTreeMap<String, Depth>,
    /// Open incidents per topic (none listed when the store keeps no
    /// incidents).
    #[serde(default)]
    pub incidents: BTreeMap<String, u64>,
    /// When the oldest outcome the store keeps ended (the first in its
    /// log), if any.
    #[serde(with = "optional_millis")]
    pub oldest_outcome: Option<SystemTime>,
}

mod optional_millis {
    use std::time::SystemTime;

    use serde::{Serialize, Serializer};

    pub(super) fn serialize<S: Serializer>(time: &Option<SystemTime>, serializer: S) -> Result<S::Ok, S::Error> {
        time.map(crate::wire::epoch_millis::to_millis).serialize(serializer)
    }
}

impl super::Dispatcher {
    /// The last published snapshot: lock-free, never waits on the store.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot.load_full()
    }

    /// Publishes a fresh snapshot (the host calls this periodically).
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    pub fn publish_snapshot(&self) -> Result<Arc<Snapshot>, StoreError> {
        let snapshot = Arc::new(Snapshot {
            taken_at: self.clock.now(),
            totals: self.counters.totals(),
            depths: self.store.depths()?.into_iter().collect(),
            incidents: match self.store.supports().incidents {
                Some(incidents) => incidents.open_incident_counts()?.into_iter().collect(),
                None => Default::default(),
            },
            oldest_outcome: self.store.outcomes_after(0, 1)?.first().map(|o| o.finished_at),
        });
        self.snapshot.store(snapshot.clone());
        Ok(snapshot)
    }

    /// Jobs this dispatcher has enqueued so far. A job is counted once it is
    /// stored, and a snapshot reads this count before the store's depths, so
    /// a snapshot whose `totals.enqueued` is at least the count read after
    /// a job's enqueue has that job in its depths.
    pub fn enqueued(&self) -> u64 {
        self.counters.enqueued_so_far()
    }

    /// Totals, read from the counters directly.
    pub fn totals(&self) -> Totals {
        self.counters.totals()
    }
}
