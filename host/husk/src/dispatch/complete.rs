//! Reports commit while the workers run on: the completer.
//!
//! On a store whose commit waits for a flush (PostgreSQL with
//! `synchronous_commit` on), a worker that reports and waits spends most of
//! its time waiting: one flush per batch, however small the batch. A store
//! that says so ([`Behaviour::commits_wait_for_a_flush`]) has its reports
//! handed to the dispatcher's completer thread instead: it takes every
//! report waiting, makes one store call of them all (one transaction, one
//! flush), and tells each worker its results. Meanwhile the worker fetches
//! and runs its next batches; a worker has at most a few batches waiting
//! here (`worker::MAX_PENDING_BATCHES`) before it waits for the oldest, so
//! a store that is down holds the workers up rather than the reports piling
//! up.
//!
//! Nothing changes for what a report means: a job stays locked until its
//! report commits, its outcome is delivered after the commit, the tenant's
//! permits come back after it, and a report the store refuses for a while
//! is tried again while the jobs' locks last (see [`Dispatcher::submit_reports`]).
//! A process killed with reports waiting loses them as it would lose a
//! report in flight: the locks expire and the jobs run again.
//!
//! [`Behaviour::commits_wait_for_a_flush`]: crate::store::Behaviour::commits_wait_for_a_flush

use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime};

use parking_lot::{Condvar, Mutex};

use super::Dispatcher;
use crate::store::{Lock, Report, Reported};

/// What a hand-off's caller is told when its reports are done with: their
/// results in order, or `None` when they were given up (their locks
/// expire and the jobs are retried).
type Completion = Box<dyn FnOnce(Option<Vec<Reported>>) + Send>;

/// One batch's reports, waiting for the completer.
struct Handoff {
    reports: Vec<(Lock, Report)>,
    /// When the earliest of the batch's locks expires: past it, trying the
    /// report again is pointless.
    expires: Option<SystemTime>,
    done: Completion,
}

#[derive(Default)]
struct Queue {
    waiting: Vec<Handoff>,
    /// Whether the completer thread runs.
    started: bool,
    /// Set when the dispatcher is dropped: the thread ends once the queue
    /// is empty.
    closed: bool,
}

/// The completer (see the module docs).
#[derive(Default)]
pub(super) struct Completer {
    shared: Arc<(Mutex<Queue>, Condvar)>,
}

impl std::fmt::Debug for Completer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Completer").finish_non_exhaustive()
    }
}

/// A hand-off that has not committed yet: wait for it before handing off
/// the next batch, and before the worker ends.
#[derive(Debug)]
#[must_use = "a worker waits for its hand-off before the next one"]
pub struct Pending(Receiver<()>);

impl Pending {
    /// Waits until the reports are done with (committed or given up).
    pub fn wait(self) {
        // A closed channel is also the end: the completion was dropped.
        let _ = self.0.recv();
    }
}

impl Completer {
    /// Queues `handoff`, starting the completer thread on first use; gives
    /// it back when the thread cannot start.
    fn hand_off(&self, dispatcher: &Arc<Dispatcher>, handoff: Handoff) -> Result<(), (Handoff, std::io::Error)> {
        let (queue, changed) = &*self.shared;
        let mut queue = queue.lock();
        if !queue.started {
            let shared = self.shared.clone();
            let dispatcher = Arc::downgrade(dispatcher);
            let started =
                std::thread::Builder::new().name("husk-completer".into()).spawn(move || run(&shared, &dispatcher));
            if let Err(error) = started {
                return Err((handoff, error));
            }
            queue.started = true;
        }
        queue.waiting.push(handoff);
        changed.notify_one();
        Ok(())
    }

    /// Lets the thread end once nothing waits.
    pub(super) fn close(&self) {
        let (queue, changed) = &*self.shared;
        queue.lock().closed = true;
        changed.notify_all();
    }
}

/// The completer thread: each round takes every hand-off waiting.
fn run(shared: &(Mutex<Queue>, Condvar), dispatcher: &Weak<Dispatcher>) {
    let (queue, changed) = shared;
    loop {
        let round = {
            let mut queue = queue.lock();
            while queue.waiting.is_empty() && !queue.closed {
                changed.wait(&mut queue);
            }
            if queue.waiting.is_empty() {
                return;
            }
            std::mem::take(&mut queue.waiting)
        };
        match dispatcher.upgrade() {
            Some(dispatcher) => dispatcher.complete(round),
            None => round.into_iter().for_each(|handoff| (handoff.done)(None)),
        }
    }
}

impl Dispatcher {
    /// Submits a batch's reports — at once on the caller's thread, or
    /// through the completer when the store completes in the background —
    /// and calls `done` with their results (`None`: given up, the locks
    /// expire and the jobs are retried). `expires` is when the earliest of
    /// the batch's locks expires. The returned [`Pending`] is done when
    /// `done` has run.
    pub fn hand_off(
        self: &Arc<Self>,
        reports: Vec<(Lock, Report)>,
        expires: Option<SystemTime>,
        done: impl FnOnce(Option<Vec<Reported>>) + Send + 'static,
    ) -> Pending {
        let (signal, pending) = sync_channel(1);
        let done = signalling(signal, done);
        let handoff = Handoff { reports, expires, done };
        if !self.store.behaviour().commits_wait_for_a_flush {
            self.complete(vec![handoff]);
        } else if let Err((handoff, error)) = self.completer.hand_off(self, handoff) {
            tracing::error!(%error, "cannot start the completer thread; reporting on the worker");
            self.complete(vec![handoff]);
        }
        Pending(pending)
    }

    /// One store call for every hand-off of `round`, tried again while
    /// their locks last; when the store refuses the shared call for good,
    /// each hand-off is tried in a call of its own.
    fn complete(&self, mut round: Vec<Handoff>) {
        let mut failures = 0u32;
        loop {
            let reports: Vec<(Lock, Report)> = round.iter().flat_map(|h| h.reports.iter().cloned()).collect();
            let error = match self.submit_reports(reports) {
                Ok(mut results) => {
                    for handoff in round.into_iter().rev() {
                        let mine = results.split_off(results.len() - handoff.reports.len());
                        (handoff.done)(Some(mine));
                    }
                    return;
                }
                Err(error) => error,
            };
            if !error.is_retryable() && round.len() > 1 {
                round.into_iter().for_each(|handoff| self.complete(vec![handoff]));
                return;
            }
            failures += 1;
            let backoff = Duration::from_millis(50 << failures.min(4));
            let retry_by = self.clock.now() + backoff;
            let (keep, give_up): (Vec<_>, Vec<_>) =
                round.into_iter().partition(|h| error.is_retryable() && h.expires.is_some_and(|at| retry_by < at));
            if !give_up.is_empty() {
                let jobs: usize = give_up.iter().map(|h| h.reports.len()).sum();
                tracing::error!(%error, jobs, "report failed; the jobs' locks will expire and be retried");
                give_up.into_iter().for_each(|handoff| (handoff.done)(None));
            }
            if keep.is_empty() {
                return;
            }
            let jobs: usize = keep.iter().map(|h| h.reports.len()).sum();
            tracing::warn!(%error, jobs, "report failed; trying again");
            std::thread::sleep(backoff);
            round = keep;
        }
    }
}

/// `done`, then the signal that the hand-off is done with.
fn signalling(signal: SyncSender<()>, done: impl FnOnce(Option<Vec<Reported>>) + Send + 'static) -> Completion {
    Box::new(move |results| {
        done(results);
        let _ = signal.send(());
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use parking_lot::Mutex;

    use crate::clock::SystemClock;
    use crate::dispatch::{Dispatcher, TopicPolicy};
    use crate::outcome::{CollectingSink, Outcome};
    use crate::store::{AttemptRun, FetchRequest, JobId, MemoryStore, Report, Reported};

    /// Eight threads hand off batches at once: the completer merges them
    /// into shared store calls, and each hand-off is told the results of
    /// its own reports, in its order, and only after they committed.
    #[test]
    fn merged_hand_offs_each_get_their_own_results() {
        let store = Arc::new(MemoryStore::new().completing_in_background());
        let sink = Arc::new(CollectingSink::default());
        let dispatcher = Dispatcher::new(store, Arc::new(SystemClock), sink.clone(), None);
        dispatcher.set_topic("t", TopicPolicy::default());
        dispatcher.submit(crate::Enqueue::many("t", vec![b"{}".to_vec(); 8 * 5 * 4])).unwrap();
        // Per hand-off: the jobs it sent, the jobs its results name.
        type Told = Vec<(Vec<JobId>, Vec<JobId>)>;
        let told: Arc<Mutex<Told>> = Arc::default();
        std::thread::scope(|scope| {
            for worker in 0..8 {
                let (dispatcher, told, sink) = (&dispatcher, &told, &sink);
                scope.spawn(move || {
                    let topics = ["t".to_owned()];
                    let name = format!("w{worker}");
                    let mut pending = Vec::new();
                    for _ in 0..5 {
                        let request = FetchRequest {
                            worker: &name,
                            topics: &topics,
                            max: 4,
                            lock_duration: Duration::from_secs(60),
                        };
                        let jobs = dispatcher
                            .fetch_and_lock(request, Duration::ZERO, &Default::default(), None, &mut Default::default())
                            .unwrap();
                        let sent: Vec<JobId> = jobs.iter().map(|j| j.id()).collect();
                        let reports = jobs
                            .iter()
                            .map(|j| {
                                let output = j.id().0.to_string().into_bytes();
                                (j.lock, Report::Completed { output, run: AttemptRun::default() })
                            })
                            .collect();
                        let (told, sink_len) = (told.clone(), sink.clone());
                        pending.push(dispatcher.hand_off(reports, None, move |results| {
                            let results = results.expect("committed");
                            let ended: Vec<JobId> = results
                                .iter()
                                .map(|r| match r {
                                    Reported::Ended(outcome) => {
                                        assert_eq!(
                                            outcome.outcome,
                                            Outcome::Completed { output: outcome.job_id.0.to_string().into_bytes() }
                                        );
                                        outcome.job_id
                                    }
                                    other => panic!("{other:?}"),
                                })
                                .collect();
                            // Delivered before this hand-off is told.
                            let delivered = sink_len.outcomes();
                            assert!(ended.iter().all(|id| delivered.iter().any(|o| o.job_id == *id)));
                            told.lock().push((sent, ended));
                        }));
                    }
                    pending.into_iter().for_each(super::Pending::wait);
                });
            }
        });
        let told = told.lock();
        assert_eq!(told.len(), 8 * 5);
        for (sent, ended) in told.iter() {
            assert_eq!(sent, ended, "a hand-off is told its own jobs' results, in order");
        }
        assert_eq!(sink.outcomes().len(), 8 * 5 * 4);
    }
}
