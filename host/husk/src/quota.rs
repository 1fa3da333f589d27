//! Quotas: what a tenant's topics may take from the host together — jobs
//! running at once (the concurrency gate) and live jobs (the queue check).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use std::collections::BTreeMap;

use crate::clock::Clock;
use crate::store::{Depth, JobStore, PermitLease};

/// Limits one tenant's topics share. `None` is unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Quota {
    /// Most jobs of the tenant running at once, across its topics.
    pub max_concurrent: Option<usize>,
    /// Most live (queued, gated or running) jobs across its topics.
    pub max_queued: Option<u64>,
}

impl Quota {
    /// Sets `max_concurrent` (see the field).
    #[must_use]
    pub fn with_max_concurrent(mut self, max_concurrent: Option<usize>) -> Self {
        self.max_concurrent = max_concurrent;
        self
    }

    /// Sets `max_queued` (see the field).
    #[must_use]
    pub fn with_max_queued(mut self, max_queued: Option<u64>) -> Self {
        self.max_queued = max_queued;
        self
    }
}

/// Counts a tenant's running jobs against its `max_concurrent`: a worker
/// takes a permit per job it claims and gives it back when the job's report
/// is in. Permits are taken only together with claimed jobs, so an idle
/// worker never holds one another topic of the tenant could use.
///
/// With a store shared by several processes ([`ConcurrencyGate::shared`]),
/// the permits are also leased from the store, so the limit holds across
/// every process: see [`Shared::acquire_permits`](crate::store::Shared::acquire_permits).
#[derive(Debug)]
pub struct ConcurrencyGate {
    limit: usize,
    used: AtomicUsize,
    /// Set when a fetch found the gate full: the next permits given back
    /// must wake the waiting fetchers.
    starved: AtomicBool,
    /// The store's leases, when the limit holds across processes.
    shared: Option<SharedGate>,
}

/// The part of a gate kept in a store shared by several processes.
pub struct SharedGate {
    /// The store.
    pub store: Arc<dyn JobStore>,
    /// The dispatcher's clock.
    pub clock: Arc<dyn Clock>,
    /// The tenant.
    pub tenant: String,
    /// This process (unique per process).
    pub holder: String,
    /// How long a lease lasts without being renewed by a take or a give:
    /// a killed process's permits come back after this.
    pub lease: Duration,
    /// Permits this process holds, as last written to the store; the store
    /// is always told the whole count (so a write that failed is mended by
    /// the next), and the mutex orders this process's writes.
    pub leased: parking_lot::Mutex<usize>,
}

impl std::fmt::Debug for SharedGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedGate").field("tenant", &self.tenant).field("holder", &self.holder).finish_non_exhaustive()
    }
}

impl ConcurrencyGate {
    /// A gate letting `limit` jobs run at once.
    pub fn new(limit: usize) -> Self {
        Self { limit: limit.max(1), used: AtomicUsize::new(0), starved: AtomicBool::new(false), shared: None }
    }

    /// A gate letting `limit` jobs of the tenant run at once across every
    /// process sharing `shared.store`.
    pub fn shared(limit: usize, shared: SharedGate) -> Self {
        Self { shared: Some(shared), ..Self::new(limit) }
    }

    /// The limit.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Permits in use.
    pub fn in_use(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    /// Takes up to `want` permits without waiting; returns how many it took
    /// (0 when the tenant is at its limit). A shared gate also leases them
    /// from the store; a store failure takes none (and is logged).
    pub fn try_take(&self, want: usize) -> usize {
        let take = self.try_take_here(want);
        let Some(shared) = &self.shared else { return take };
        if take == 0 {
            return 0;
        }
        let mut held = shared.leased.lock();
        let now = shared.clock.now();
        let until = now + shared.lease;
        let lease = PermitLease {
            tenant: &shared.tenant,
            holder: &shared.holder,
            held: *held,
            want: take,
            limit: self.limit,
            until,
        };
        let leased = match shared.store.shared().and_then(|store| store.acquire_permits(&lease, now)) {
            Ok(leased) => leased.min(take),
            Err(error) => {
                tracing::warn!(tenant = %shared.tenant, %error, "leasing concurrency permits failed");
                0
            }
        };
        *held += leased;
        drop(held);
        if leased < take {
            // Other processes hold the rest: given back here, unflagged
            // (their release wakes no one here; the fetch polls again).
            self.used.fetch_sub(take - leased, Ordering::SeqCst);
        }
        leased
    }

    fn try_take_here(&self, want: usize) -> usize {
        let mut used = self.used.load(Ordering::Acquire);
        loop {
            let take = want.min(self.limit.saturating_sub(used));
            if take == 0 {
                // Flag first, then look again: permits given back before the
                // flag was seen are taken here; after it, the giver wakes us.
                self.starved.store(true, Ordering::SeqCst);
                used = self.used.load(Ordering::SeqCst);
                if used < self.limit {
                    continue;
                }
                return 0;
            }
            match self.used.compare_exchange_weak(used, used + take, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return take,
                Err(now) => used = now,
            }
        }
    }

    /// Gives back `n` permits. Returns whether a fetch found the gate full
    /// since the last wake: the caller then wakes the waiting fetchers.
    #[must_use = "a fetch waiting for a permit must be woken"]
    pub fn give(&self, n: usize) -> bool {
        if n == 0 {
            return false;
        }
        if let Some(shared) = &self.shared {
            let mut held = shared.leased.lock();
            *held = held.saturating_sub(n);
            let until = shared.clock.now() + shared.lease;
            let released =
                shared.store.shared().and_then(|s| s.release_permits(&shared.tenant, &shared.holder, *held, until));
            if let Err(error) = released {
                tracing::warn!(tenant = %shared.tenant, %error, "returning concurrency permits failed; the next lease write mends it");
            }
        }
        let before = self.used.fetch_sub(n, Ordering::SeqCst);
        debug_assert!(before >= n, "gave back more permits than taken");
        self.starved.swap(false, Ordering::SeqCst)
    }
}

/// Live jobs of `topics` among `depths`.
fn live_in<'a>(depths: impl IntoIterator<Item = (&'a String, &'a Depth)>, topics: &[String]) -> u64 {
    depths.into_iter().filter(|(topic, _)| topics.contains(topic)).map(|(_, d)| d.live()).sum()
}

/// A tenant's `max_queued` check. Counting the tenant's live jobs in the
/// store costs a scan of them (tens of milliseconds with a backlog of
/// 100,000 on PostgreSQL), too slow for every enqueue. So the check
/// estimates from the last published snapshot (at most a second old) plus
/// the jobs this process enqueued that the snapshot may not count — an
/// over-estimate, as jobs that ended since are still counted — and counts
/// exactly only when the estimate comes within a tenth of the limit. It
/// serves a store one process uses: jobs other processes enqueued since the
/// snapshot would not be in the estimate, so on a store several processes
/// share [`crate::Host`] counts every enqueue in the store instead
/// ([`Shared::enqueue_capped`](crate::store::Shared::enqueue_capped)).
///
/// Which enqueues a snapshot counts is decided by the dispatcher's enqueue
/// count (`Dispatcher::enqueued`),
/// not by when the snapshot was published: a snapshot reads that count before
/// it reads the depths, so a job whose count it read is in its depths, while
/// a job stored during the depth read may be missing from a snapshot
/// published after it.
#[derive(Debug, Default)]
pub struct QueueCheck {
    /// For each enqueue here whose jobs the last snapshot may not count,
    /// the dispatcher's enqueue count once they were stored, and how many
    /// jobs it created.
    uncounted: VecDeque<(u64, u64)>,
    /// The jobs of `uncounted`, summed.
    uncounted_jobs: u64,
}

impl QueueCheck {
    /// The tenant's live jobs (of `topics`) as far as the check against
    /// `max` of `adding` more jobs needs: the estimate when clearly under
    /// with them, else counted in
    /// `exact()`, the store's depths. The estimate starts from a published
    /// snapshot: its `depths`, read after it read the dispatcher's enqueue
    /// count `counted` (see the type's docs).
    ///
    /// # Errors
    ///
    /// What `exact` returns.
    pub fn live<E>(
        &mut self,
        counted: u64,
        depths: &BTreeMap<String, Depth>,
        topics: &[String],
        max: u64,
        adding: u64,
        exact: impl FnOnce() -> Result<Vec<(String, Depth)>, E>,
    ) -> Result<u64, E> {
        while let Some(&(mark, jobs)) = self.uncounted.front()
            && mark <= counted
        {
            self.uncounted.pop_front();
            self.uncounted_jobs -= jobs;
        }
        let estimate = live_in(depths, topics) + self.uncounted_jobs;
        if estimate + adding <= max - max / 10 {
            Ok(estimate)
        } else {
            Ok(live_in(exact()?.iter().map(|(t, d)| (t, d)), topics))
        }
    }

    /// Counts `jobs` jobs enqueued after the check; `mark` is the
    /// dispatcher's enqueue count read after they were stored.
    pub fn added(&mut self, mark: u64, jobs: u64) {
        self.uncounted.push_back((mark, jobs));
        self.uncounted_jobs += jobs;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::{ConcurrencyGate, QueueCheck};
    use crate::store::Depth;

    /// What a snapshot that read the enqueue count `enqueued`, then `queued`
    /// live jobs of topic `t`, holds: the count and the depths.
    fn snapshot(enqueued: u64, queued: u64) -> (u64, BTreeMap<String, Depth>) {
        let depths = [
            ("t".to_owned(), Depth { queued, ..Depth::default() }),
            ("other".to_owned(), Depth { queued: 500, ..Depth::default() }),
        ];
        (enqueued, depths.into_iter().collect())
    }

    /// The check's answer for topic `t`, from what a snapshot holds.
    fn live<E>(
        check: &mut QueueCheck,
        (counted, depths): (u64, BTreeMap<String, Depth>),
        max: u64,
        exact: impl FnOnce() -> Result<Vec<(String, Depth)>, E>,
    ) -> Result<u64, E> {
        check.live(counted, &depths, &["t".to_owned()], max, 1, exact)
    }

    #[test]
    fn the_gate_hands_out_at_most_its_limit() {
        let gate = ConcurrencyGate::new(3);
        assert_eq!((gate.try_take(2), gate.try_take(2), gate.try_take(1)), (2, 1, 0));
        assert!(gate.give(2), "a fetch found the gate full: wake the fetchers");
        assert!(!gate.give(0));
        assert_eq!((gate.in_use(), gate.try_take(5)), (1, 2));
        assert!(!gate.give(1), "no fetch found it full since");
    }

    #[test]
    fn the_queue_check_estimates_far_from_the_limit_and_counts_near_it() {
        let mut check = QueueCheck::default();
        let exact_never = || -> Result<Vec<(String, Depth)>, ()> { panic!("counted exactly far from the limit") };
        // 80 published (enqueue count 100) + up to 9 enqueued since: under
        // 90 (the limit less a tenth), estimated.
        for n in 0..10 {
            assert_eq!(live(&mut check, snapshot(100, 80), 100, exact_never), Ok(80 + n));
            check.added(101 + n, 1);
        }
        // 80 + 10 is within a tenth of the limit: counted exactly.
        let store = || {
            Ok::<_, ()>(vec![
                ("t".to_owned(), Depth { queued: 97, ..Depth::default() }),
                ("other".to_owned(), Depth { queued: 3, ..Depth::default() }),
            ])
        };
        assert_eq!(live(&mut check, snapshot(100, 80), 100, store), Ok(97));
        // A newer snapshot that read the count after 5 of the 10 (and saw
        // one job end): it counts those 5 in its depths, the other 5 are
        // still added.
        assert_eq!(live(&mut check, snapshot(105, 84), 100, exact_never), Ok(84 + 5));
        // One that read the count after all of them: none added.
        assert_eq!(live(&mut check, snapshot(110, 84), 100, exact_never), Ok(84));
        // A batch of 7 would take the estimate (84) past 90: counted exactly.
        let (counted, depths) = snapshot(110, 84);
        assert_eq!(check.live(counted, &depths, &["t".to_owned()], 100, 7, store), Ok(97));
        assert_eq!(check.live(counted, &depths, &["t".to_owned()], 100, 6, exact_never), Ok(84));
    }

    #[test]
    fn a_snapshot_published_after_an_enqueue_but_read_before_it_does_not_hide_it() {
        // Max 3, two live jobs in the snapshot: a third is admitted.
        let mut check = QueueCheck::default();
        let exact = || Ok::<_, ()>(vec![("t".to_owned(), Depth { queued: 3, ..Depth::default() })]);
        let first = snapshot(2, 2);
        assert_eq!(live(&mut check, first, 3, exact), Ok(2));
        check.added(3, 1);
        // A new snapshot read the count (2) and the depths while the third
        // was being stored, and was published after: it does not count the
        // third, so the check still does, reaches the limit and counts exactly.
        let newer = snapshot(2, 2);
        assert_eq!(live(&mut check, newer, 3, exact), Ok(3));
    }
}
