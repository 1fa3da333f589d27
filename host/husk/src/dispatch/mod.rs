//! The dispatcher: enqueue, long-poll fetch-and-lock, classification of
//! faults outside the store, retry by re-arm, and terminal-only delivery.
//!
//! Every method runs on its caller's thread (a worker, an API handler);
//! nothing here is a task or a timer per job. A waiting fetch sleeps on its
//! topic's [`Notifier`] until a job of the topic is enqueued, a job is
//! re-armed, the clock moves (a manual clock), or the nearest gate or lock
//! expiry comes — one timed wait per waiting fetcher (see `wake`); a fetch
//! that found its topic paused sleeps until a resume, whatever is enqueued.

mod combine;
mod complete;
mod enqueue;
mod stats;
mod wake;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use parking_lot::{Mutex, RwLock};

use arc_swap::ArcSwap;

use combine::Combiner;
use complete::Completer;
pub use complete::Pending;
pub(crate) use enqueue::on_blocking_thread;
pub use enqueue::{Enqueue, EnqueueJob};
use stats::Counters;
pub use stats::{Snapshot, Totals};
pub use wake::LastFetch;
use wake::Wakers;

use crate::classify::{Classification, ErrorMapper, classify};
use crate::clock::Clock;
use crate::fault::Fault;
use crate::notify::{Notifier, Seen};
use crate::outcome::{Outcome, OutcomeSink, TerminalOutcome};
use crate::permanent::PermanentFaults;
use crate::quota::ConcurrencyGate;
use crate::retry::{RetryPolicy, RetryPolicySpec};
use crate::sandbox::{CancelToken, Ending};
use crate::store::{
    AttemptRun, CancelResult, Capped, DiscardResult, Enqueued, FetchRequest, JobId, JobStore, Lock, LockedJob, NewJob,
    PRIORITIES, Pruned, QueueCap, Report, Reported, Retention, RetryIncidentResult, StoreError, StoreEvents,
};

/// How a topic's faults are classified and retried.
#[derive(Debug, Clone, Default)]
pub struct TopicPolicy {
    /// The topic's retry policy; `None` falls back to the engine-wide
    /// default, then to the built-in default.
    pub retry: Option<RetryPolicySpec>,
    /// The topic's error mapper; `None` makes every fault technical.
    pub mapper: Option<ErrorMapper>,
    /// Whether its jobs' inputs are dropped when they end (personal data,
    /// say); `false` keeps each with its outcome (see [`NewJob::keep_input`]).
    pub drop_input: bool,
    /// Technical faults never retried: such a job ends at once, an
    /// incident (default: [`PermanentFaults::default`]).
    pub permanent: PermanentFaults,
}

/// Why an enqueue was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EnqueueError {
    /// The topic is not registered.
    #[error("unknown topic `{0}`")]
    UnknownTopic(String),
    /// The topic's tenant has its `max_queued` live jobs already.
    #[error("tenant `{tenant}` has {live} live jobs, its max_queued is {max}")]
    QuotaExceeded {
        /// The tenant.
        tenant: String,
        /// Its live jobs (queued, gated or running), as counted.
        live: u64,
        /// Its `max_queued`.
        max: u64,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The dispatcher. Shared by every worker and API handler (`Arc`).
pub struct Dispatcher {
    store: Arc<dyn JobStore>,
    clock: Arc<dyn Clock>,
    sink: Arc<dyn OutcomeSink>,
    wakers: Wakers,
    combiner: Combiner,
    completer: Completer,
    default_retry: Option<RetryPolicySpec>,
    topics: RwLock<HashMap<String, Arc<TopicPolicy>>>,
    running: RunningJobs,
    counters: Counters,
    snapshot: ArcSwap<Snapshot>,
    shut_down: AtomicBool,
    interrupting: AtomicBool,
}

impl Drop for Dispatcher {
    fn drop(&mut self) {
        self.completer.close();
    }
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher").field("clock", &self.clock).finish_non_exhaustive()
    }
}

impl Dispatcher {
    /// A dispatcher over `store`, reading time from `clock` and delivering
    /// terminal outcomes to `sink`. `default_retry` is the engine-wide retry
    /// policy (`None`: the built-in default).
    pub fn new(
        store: Arc<dyn JobStore>,
        clock: Arc<dyn Clock>,
        sink: Arc<dyn OutcomeSink>,
        default_retry: Option<RetryPolicySpec>,
    ) -> Arc<Self> {
        let wakers = Wakers::new(clock.clone());
        let snapshot = Snapshot {
            taken_at: clock.now(),
            totals: Totals::default(),
            depths: Default::default(),
            incidents: Default::default(),
            oldest_outcome: None,
        };
        let combiner = Combiner::new(!store.behaviour().commits_in_groups);
        let dispatcher = Arc::new(Self {
            store,
            clock,
            sink,
            wakers,
            combiner,
            completer: Completer::default(),
            default_retry,
            topics: RwLock::new(HashMap::new()),
            running: RunningJobs::default(),
            counters: Counters::default(),
            snapshot: ArcSwap::from_pointee(snapshot),
            shut_down: AtomicBool::new(false),
            interrupting: AtomicBool::new(false),
        });
        if let Some(shared) = dispatcher.store.supports().shared {
            let events: Arc<dyn StoreEvents> = dispatcher.clone();
            shared.subscribe(Arc::downgrade(&events));
        }
        dispatcher
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn JobStore> {
        &self.store
    }

    /// The clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Registers (or replaces) a topic and its policy.
    pub fn set_topic(&self, topic: impl Into<String>, policy: TopicPolicy) {
        self.topics.write().insert(topic.into(), Arc::new(policy));
    }

    fn topic(&self, topic: &str) -> Option<Arc<TopicPolicy>> {
        self.topics.read().get(topic).cloned()
    }

    /// The retry policy a new job of `topic` gets: the topic's over the
    /// engine-wide default over the built-in default.
    pub fn resolve_retry(&self, topic: &TopicPolicy) -> RetryPolicySpec {
        RetryPolicySpec::resolve(topic.retry, self.default_retry)
    }

    /// The engine-wide retry policy, if one was set.
    pub fn default_retry(&self) -> Option<RetryPolicySpec> {
        self.default_retry
    }

    /// Locks up to `request.max` jobs of `request.topics` for
    /// `request.worker`, waiting up to `wait` (clock time) for one to become
    /// fetchable. Returns no jobs when the wait ends, the dispatcher shuts
    /// down, or `stop` is set. With a tenant's concurrency `gate`, one permit
    /// is taken per job returned, which the caller gives back once the job's
    /// report is in; while the tenant is at its limit the fetch waits
    /// without claiming (and holds no permit while it finds nothing).
    ///
    /// `last`: what this fetcher's previous call found (see [`LastFetch`]).
    /// If that fetch took every fetchable job, this call waits for a wake
    /// (or the fetch's next gate, or `wait`'s end) before it fetches.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    pub fn fetch_and_lock(
        &self,
        request: FetchRequest<'_>,
        wait: Duration,
        stop: &AtomicBool,
        gate: Option<&ConcurrencyGate>,
        last: &mut LastFetch,
    ) -> Result<Vec<LockedJob>, StoreError> {
        let deadline = self.clock.now() + wait;
        let notifier = self.wakers.for_fetch(request.topics);
        let mut drained = last.take_drained(&notifier);
        loop {
            if self.shut_down.load(Ordering::Acquire) {
                return Ok(Vec::new());
            }
            if stop.load(Ordering::Acquire) {
                // This fetcher may have been the one woken for a job: pass
                // the wake on to another of its topic's.
                if let [topic] = request.topics {
                    self.wakers.topic(topic, 1);
                }
                return Ok(Vec::new());
            }
            if let Some((seen, next_wake, paused)) = drained.take() {
                // The previous fetch took all there was: look again once a
                // wake or its next gate comes (once its topics resume, if
                // they were paused). At the deadline it looks anyway
                // (nothing is missed for longer than `wait`).
                let now = self.clock.now();
                if now < deadline && next_wake.is_none_or(|gate| gate > now) {
                    let wake = next_wake.map_or(deadline, |gate| gate.min(deadline));
                    self.sleep(&notifier, seen, true, paused, wake);
                    continue;
                }
            }
            let seen = notifier.seen();
            let now = self.clock.now();
            let permits = gate.map_or(request.max, |g| g.try_take(request.max));
            let (mut next_wake, mut looked, mut paused) = (None, false, false);
            if permits > 0 {
                let fetched = self.store.fetch_and_lock(FetchRequest { max: permits, ..request }, now);
                if let Some(gate) = gate
                    && gate.give(permits - fetched.as_ref().map_or(0, |f| f.jobs.len()))
                {
                    // Another topic of the tenant waits for these permits.
                    self.wakers.all();
                }
                let fetched = fetched?;
                for ended in &fetched.ended {
                    self.deliver(ended);
                }
                // Fewer jobs than asked for: every job fetchable when this
                // fetch began is taken (by it or by others), or not due.
                let took_all = fetched.jobs.len() < permits;
                last.record(took_all, &notifier, seen, &fetched);
                if !fetched.jobs.is_empty() {
                    return Ok(fetched.jobs);
                }
                // Found nothing: wakes for jobs enqueued before this fetch
                // are spent (their jobs were claimed by others, or are not
                // due yet).
                (next_wake, looked, paused) = (fetched.next_wake, true, fetched.paused);
            }
            if now >= deadline {
                return Ok(Vec::new());
            }
            let wake = next_wake.map_or(deadline, |gate| gate.min(deadline));
            self.sleep(&notifier, seen, looked, paused, wake);
        }
    }

    /// A fetcher's sleep on `notifier` after `seen`, until `wake` at the
    /// latest. Its topics `paused`: only a change for all ends it early (a
    /// resume, a shutdown, the clock moved by hand), not the wakes of new
    /// jobs, which it could not claim: a paused topic's enqueues would
    /// otherwise cost a claim each, for nothing.
    fn sleep(&self, notifier: &Notifier, seen: Seen, looked: bool, paused: bool, wake: SystemTime) {
        let timeout = self.clock.real_wait(wake);
        if paused {
            notifier.wait_for_all(seen, timeout);
        } else {
            notifier.wait(seen, looked, timeout);
        }
    }

    /// Decides what a run's ending means, classifying a fault — the guest's
    /// own, or a kill's reserved one (its body saying the run took
    /// `run.duration`) — with the topic's mapper. Runs on the caller's
    /// thread, outside the store. The report carries `run` (version, start,
    /// duration, fuel) to the job's attempt history.
    pub fn judge(&self, job: &LockedJob, ending: Ending, run: AttemptRun) -> Report {
        let fault = match ending {
            Ending::Returned(output) => return Report::Completed { output, run },
            Ending::Cancelled => return Report::End { outcome: Outcome::Cancelled, run },
            Ending::Fault(fault) => fault,
            Ending::Killed(kill) => kill.to_fault(run.duration.unwrap_or_default()),
        };
        let policy = self.topic(&job.topic);
        let classification = classify(policy.as_ref().and_then(|p| p.mapper.as_ref()), &fault);
        let permanent = |code: &str| match &policy {
            Some(policy) => policy.permanent.matches(code),
            None => PermanentFaults::default().matches(code),
        };
        let failed = |diagnostic: String, fault: Fault| Outcome::Failed {
            topic: job.topic.clone(),
            attempts: job.attempt,
            last_fault: fault,
            diagnostic,
            plugin_version: run.plugin_version.clone(),
        };
        let outcome = match classification {
            Classification::BusinessError { code, message } => Outcome::BusinessError { code, message },
            Classification::BusinessStatus { value } => Outcome::BusinessStatus { value },
            Classification::TechnicalNonRetryable { diagnostic } => failed(diagnostic, fault),
            Classification::Technical { diagnostic } if permanent(&fault.code) => {
                failed(format!("{diagnostic}; `{}` is a permanent fault: never retried", fault.code), fault)
            }
            Classification::Technical { diagnostic } => match job.policy.retry(job.attempt, &diagnostic) {
                Some(backoff) => return Report::ReArm { fault, not_before: self.clock.now() + backoff, run },
                None => failed(diagnostic, fault),
            },
        };
        Report::End { outcome, run }
    }

    /// Applies reports (each re-validated against its lock by the store)
    /// and delivers the terminal outcomes. A report whose lock was lost is
    /// dropped.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    pub fn submit_reports(&self, reports: Vec<(Lock, Report)>) -> Result<Vec<Reported>, StoreError> {
        let results = self.store.report(reports, self.clock.now())?;
        let mut re_armed = false;
        for result in &results {
            match result {
                Reported::Ended(outcome) => self.deliver(outcome),
                Reported::ReArmed => {
                    self.counters.retried();
                    re_armed = true;
                }
                Reported::LockLost => self.counters.report_dropped(),
                Reported::Released => re_armed = true,
            }
        }
        if re_armed {
            // A fetcher waiting for a later gate must recompute its wake.
            self.wakers.all();
        }
        Ok(results)
    }

    /// Judges and submits one ending (of a run that took no time: for
    /// callers that report by hand).
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    pub fn report(
        &self,
        job: &LockedJob,
        ending: Ending,
        plugin_version: Option<&str>,
    ) -> Result<Reported, StoreError> {
        let run = AttemptRun { plugin_version: plugin_version.map(str::to_owned), ..AttemptRun::default() };
        let report = self.judge(job, ending, run);
        Ok(self.submit_reports(vec![(job.lock, report)])?.remove(0))
    }

    fn deliver(&self, outcome: &TerminalOutcome) {
        self.counters.ended(&outcome.outcome);
        self.sink.deliver(outcome);
    }

    /// Counts an attempt killed at a limit or trapped (by reserved code).
    pub fn count_kill(&self, code: &str) {
        self.counters.killed(code);
    }

    /// Cancels a job: a queued or gated job ends `Cancelled` now; a running
    /// one is interrupted at its next epoch tick and ends `Cancelled` when
    /// its worker reports.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    pub fn cancel(&self, id: JobId) -> Result<CancelResult, StoreError> {
        let result = self.store.cancel(id, self.clock.now())?;
        match &result {
            CancelResult::Cancelled(outcome) => self.deliver(outcome),
            CancelResult::Cancelling => self.running.cancel(id),
            CancelResult::AlreadyEnded | CancelResult::NotFound => {}
        }
        Ok(result)
    }

    /// Re-queues an incident with a fresh attempt budget.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails or has no [`Incidents`](crate::store::Incidents).
    pub fn retry_incident(&self, id: JobId) -> Result<RetryIncidentResult, StoreError> {
        let result = self.store.incidents()?.retry_incident(id, self.clock.now())?;
        if result == RetryIncidentResult::Requeued {
            self.wakers.all();
        }
        Ok(result)
    }

    /// Pauses (`paused: true`) or resumes fetching of `topic` in every
    /// process sharing the store ([`Pauses::set_paused`](crate::store::Pauses::set_paused)); a resume wakes
    /// this process's fetchers (the store wakes the others'). Returns
    /// whether the topic's state changed.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails or has no pauses.
    pub fn set_paused(&self, topic: &str, paused: bool) -> Result<bool, StoreError> {
        let changed = self.store.pauses()?.set_paused(topic, paused)?;
        if changed && !paused {
            self.wakers.resumed(topic);
        }
        Ok(changed)
    }

    /// Prunes what `retention` no longer keeps, as of now, in batches of
    /// `batch` until a batch comes back short (see [`Pruning::prune`](crate::store::Pruning::prune));
    /// counted in [`Totals`].
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails (what was pruned before stays
    /// pruned) or has no [`Pruning`](crate::store::Pruning).
    pub fn prune(&self, retention: &Retention, batch: usize) -> Result<Pruned, StoreError> {
        let store = self.store.pruning()?;
        let batch = batch.max(1);
        let mut all = Pruned::default();
        loop {
            let pruned = store.prune(retention, self.clock.now(), batch)?;
            self.counters.pruned(pruned);
            all.outcomes += pruned.outcomes;
            all.keys += pruned.keys;
            if pruned.outcomes < batch as u64 {
                return Ok(all);
            }
        }
    }

    /// Closes an open incident without retrying it.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails or has no [`Incidents`](crate::store::Incidents).
    pub fn discard_incident(&self, id: JobId) -> Result<DiscardResult, StoreError> {
        self.store.incidents()?.discard_incident(id)
    }

    /// Registers `job` as running and returns its cancel token (already
    /// cancelled if a cancel raced ahead of the registration), so
    /// [`Dispatcher::cancel`] can interrupt it. Keep the guard until the
    /// job's report is submitted; dropping it unregisters the job.
    pub fn running(&self, job: JobId) -> RunningGuard<'_> {
        let token = self.running.register(job);
        // A shutdown's interruption that swept the running jobs just before
        // this one registered: it is interrupted too (the sweep took the
        // shard's lock after setting the flag, so the flag is seen here).
        if self.interrupting() {
            token.cancel();
        }
        RunningGuard { running: &self.running, job, token }
    }

    /// Stops every fetch: waiting fetchers return at once.
    pub fn shut_down(&self) {
        self.shut_down.store(true, Ordering::Release);
        self.wakers.all();
    }

    /// Wakes every waiting fetcher (e.g. after setting a pool's stop flag).
    pub fn wake_fetchers(&self) {
        self.wakers.all();
    }

    /// Interrupts every job running in this process at its next epoch tick
    /// (the end of a shutdown's grace period). Their workers see the run
    /// cancelled; see [`Dispatcher::interrupting`].
    pub fn interrupt_running(&self) {
        self.interrupting.store(true, Ordering::Release);
        self.running.cancel_all();
    }

    /// Whether [`Dispatcher::interrupt_running`] was called: a cancelled run
    /// is then given back to the store ([`Report::Release`]), not ended.
    pub fn interrupting(&self) -> bool {
        self.interrupting.load(Ordering::Acquire)
    }
}

impl StoreEvents for Dispatcher {
    fn jobs_available(&self) {
        self.wakers.all();
    }

    fn topic_jobs_available(&self, topic: &str, jobs: u64) {
        self.wakers.topic(topic, jobs);
    }

    fn waiting_fetchers(&self, topic: &str) -> u64 {
        self.wakers.sleeping(topic)
    }

    fn cancel_requested(&self, id: JobId) {
        self.running.cancel_if_running(id);
    }
}

/// Cancel tokens of running jobs, sharded to keep workers off one lock.
#[derive(Debug, Default)]
struct RunningJobs {
    shards: [Mutex<HashMap<JobId, CancelToken>>; 16],
}

impl RunningJobs {
    fn shard(&self, job: JobId) -> parking_lot::MutexGuard<'_, HashMap<JobId, CancelToken>> {
        self.shards[(job.0 % 16) as usize].lock()
    }

    fn register(&self, job: JobId) -> CancelToken {
        self.shard(job).entry(job).or_default().clone()
    }

    fn remove(&self, job: JobId) {
        self.shard(job).remove(&job);
    }

    /// Cancels the running job's token; if its worker has not registered
    /// it yet, the token waits, cancelled, for the registration.
    fn cancel(&self, job: JobId) {
        self.shard(job).entry(job).or_default().cancel();
    }

    /// Cancels the job's token only if it runs here (a cancel signalled by
    /// another process is for a job that may run anywhere).
    fn cancel_if_running(&self, job: JobId) {
        if let Some(token) = self.shard(job).get(&job) {
            token.cancel();
        }
    }

    fn cancel_all(&self) {
        for shard in &self.shards {
            shard.lock().values().for_each(CancelToken::cancel);
        }
    }
}

/// A running job's registration; dropping it unregisters the job.
#[derive(Debug)]
pub struct RunningGuard<'a> {
    running: &'a RunningJobs,
    job: JobId,
    token: CancelToken,
}

impl RunningGuard<'_> {
    /// The job's cancel token.
    pub fn token(&self) -> &CancelToken {
        &self.token
    }
}

impl Drop for RunningGuard<'_> {
    fn drop(&mut self) {
        self.running.remove(self.job);
    }
}
