//! The in-memory job store: one mutex over indexes of live jobs (ready
//! queues per topic, gates and lock expiries ordered by time) and a bounded
//! log of terminal outcomes. Fast, and gone when the process ends.
//!
//! Idempotency keys are kept as long as their job: [`Pruning::prune`](crate::store::Pruning::prune)
//! forgets both. The log is also bounded by count (the last
//! [`DEFAULT_RETAINED_OUTCOMES`] by default): past it the oldest outcome is
//! forgotten, but not its key — a key whose job was forgotten that way
//! still enqueues nothing and names that job, which `get` no longer finds.

mod inner;

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::SystemTime;

use parking_lot::{Mutex, MutexGuard};

use rustc_hash::FxHashMap as HashMap;

use super::{
    AttemptRecord, CancelResult, Depth, DiscardResult, Enqueued, FetchRequest, Fetched, JobId, JobRecord, JobState,
    JobStore, ListFilter, Lock, NewJob, Pruned, Report, Reported, Retention, RetryIncidentResult, StoreError,
    StoredVersion, TopicVersion,
};
use super::{Behaviour, Incidents, Pauses, Pruning, Queries, Supports, VersionToKeep, Versions};
use crate::fault::Fault;
use crate::outcome::{Outcome, TerminalOutcome};
use crate::retry::RetryPolicySpec;
use crate::versions::Rollback;

/// Terminal outcomes kept by default (for `get` and the outcome log).
/// Open incidents are kept regardless.
pub const DEFAULT_RETAINED_OUTCOMES: usize = 100_000;

/// The in-memory [`JobStore`].
#[derive(Debug)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
    retained: usize,
    background: bool,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Debug, Default)]
struct Inner {
    next_id: u64,
    next_token: u64,
    next_seq: u64,
    live: HashMap<JobId, Live>,
    /// Queued jobs per topic, the highest priority first, then the oldest
    /// (see [`Ready`]). May hold ids of jobs that were since cancelled;
    /// they are skipped when popped.
    ready: HashMap<String, BTreeSet<Ready>>,
    gates: BTreeSet<(SystemTime, JobId)>,
    locks: BTreeSet<(SystemTime, JobId)>,
    ended: HashMap<JobId, Ended>,
    log: VecDeque<TerminalOutcome>,
    incidents: BTreeSet<JobId>,
    depths: HashMap<String, Depth>,
    /// Idempotency keys and the job that took each (see the module docs).
    keys: HashMap<String, JobId>,
    /// Paused topics: not fetched.
    paused: BTreeSet<String>,
    /// Plugin versions per topic.
    versions: HashMap<String, TopicVersions>,
    /// The highest outcome sequence number pruned (by age or by count).
    pruned_through: u64,
}

/// A topic's kept plugin versions.
#[derive(Debug)]
struct TopicVersions {
    current: String,
    config: Option<String>,
    rolled_back: Option<Rollback>,
    /// Deployed longest ago first.
    kept: Vec<(StoredVersion, Arc<[u8]>)>,
}

/// A queued job's place in its topic's ready set: the highest priority
/// first, then the lowest id (the oldest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Ready(std::cmp::Reverse<i16>, JobId);

#[derive(Debug)]
struct Live {
    topic: String,
    input: Vec<u8>,
    policy: RetryPolicySpec,
    attempt: u32,
    enqueued_at: SystemTime,
    state: JobState,
    not_before: Option<SystemTime>,
    lock: Option<HeldLock>,
    last_fault: Option<Fault>,
    cancel_requested: bool,
    /// Finished attempts, oldest first.
    history: Vec<AttemptRecord>,
    /// Whether its input outlives it ([`NewJob::keep_input`](crate::store::NewJob::keep_input)).
    keep_input: bool,
    priority: i16,
}

#[derive(Debug)]
struct HeldLock {
    worker: String,
    token: u64,
    expires_at: SystemTime,
}

/// A job that ended. Its outcome lives in the log (one copy); an incident
/// keeps its own, so it outlives the log and can be retried.
#[derive(Debug)]
struct Ended {
    /// The job as it ended, without its outcome and attempts.
    record: JobRecord,
    /// Its finished attempts (apart from `record`, which `list` clones).
    history: Vec<AttemptRecord>,
    seq: u64,
    incident: Option<Incident>,
    /// Its input: kept when the job keeps it, and while it is an incident.
    input: Option<Vec<u8>>,
    keep_input: bool,
}

#[derive(Debug)]
struct Incident {
    outcome: TerminalOutcome,
}

impl MemoryStore {
    /// An empty store keeping [`DEFAULT_RETAINED_OUTCOMES`] terminal
    /// outcomes.
    pub fn new() -> Self {
        Self::with_retained_outcomes(DEFAULT_RETAINED_OUTCOMES)
    }

    /// An empty store keeping the last `retained` terminal outcomes.
    pub fn with_retained_outcomes(retained: usize) -> Self {
        Self { inner: Mutex::new(Inner::default()), retained: retained.max(1), background: false }
    }

    /// This store, its reports handed to the dispatcher's completer as a
    /// PostgreSQL store's are ([`Behaviour::commits_wait_for_a_flush`]):
    /// for exercising that path, since nothing here waits for a flush.
    #[must_use]
    pub fn completing_in_background(mut self) -> Self {
        self.background = true;
        self
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock()
    }
}

impl JobStore for MemoryStore {
    fn behaviour(&self) -> Behaviour {
        Behaviour { commits_wait_for_a_flush: self.background, ..Behaviour::default() }
    }

    fn supports(&self) -> Supports<'_> {
        Supports::all_but_sharing(self)
    }

    fn enqueue(&self, jobs: Vec<NewJob>, now: SystemTime) -> Result<Vec<Enqueued>, StoreError> {
        let mut inner = self.lock();
        let mut results = Vec::with_capacity(jobs.len());
        for job in jobs {
            if let Some(&id) = job.key.as_ref().and_then(|key| inner.keys.get(key)) {
                results.push(Enqueued { id, created: false });
                continue;
            }
            inner.next_id += 1;
            let id = JobId(inner.next_id);
            if let Some(key) = job.key {
                inner.keys.insert(key, id);
            }
            inner.live.insert(
                id,
                Live {
                    topic: job.topic,
                    input: job.input,
                    policy: job.policy,
                    attempt: 1,
                    enqueued_at: now,
                    state: JobState::Terminal, // set by `arm`
                    not_before: None,
                    lock: None,
                    last_fault: None,
                    cancel_requested: false,
                    history: Vec::new(),
                    keep_input: job.keep_input,
                    priority: job.priority,
                },
            );
            inner.arm(id, job.not_before, now);
            results.push(Enqueued { id, created: true });
        }
        Ok(results)
    }

    fn fetch_and_lock(&self, request: FetchRequest<'_>, now: SystemTime) -> Result<Fetched, StoreError> {
        let mut inner = self.lock();
        let mut fetched = Fetched::default();
        inner.open_gates(now);
        inner.reclaim_expired(now, self.retained, &mut fetched.ended);
        let expires_at = now + request.lock_duration;
        let mut exhausted_topics = 0;
        'topics: while fetched.jobs.len() < request.max && exhausted_topics < request.topics.len() {
            exhausted_topics = 0;
            for topic in request.topics {
                if fetched.jobs.len() >= request.max {
                    break 'topics;
                }
                if inner.paused.contains(topic) {
                    exhausted_topics += 1;
                    continue;
                }
                let next = loop {
                    let Some(Ready(_, id)) = inner.ready.get_mut(topic.as_str()).and_then(BTreeSet::pop_first) else {
                        break None;
                    };
                    if inner.live.get(&id).is_some_and(|job| job.state == JobState::Queued) {
                        break Some(id);
                    }
                };
                let Some(id) = next else {
                    exhausted_topics += 1;
                    continue;
                };
                inner.next_token += 1;
                let token = inner.next_token;
                inner.locks.insert((expires_at, id));
                inner.count(topic, JobState::Queued, -1);
                inner.count(topic, JobState::Running, 1);
                let job = inner.live.get_mut(&id).expect("checked above");
                job.state = JobState::Running;
                job.lock = Some(HeldLock { worker: request.worker.to_owned(), token, expires_at });
                fetched.jobs.push(super::LockedJob {
                    lock: Lock { job: id, token },
                    topic: job.topic.clone(),
                    input: job.input.clone(),
                    attempt: job.attempt,
                    policy: job.policy,
                    enqueued_at: job.enqueued_at,
                    lock_expires_at: expires_at,
                    priority: job.priority,
                });
            }
        }
        fetched.next_wake = inner.next_wake();
        fetched.paused = !request.topics.is_empty() && request.topics.iter().all(|t| inner.paused.contains(t));
        Ok(fetched)
    }

    fn report(&self, reports: Vec<(Lock, Report)>, now: SystemTime) -> Result<Vec<Reported>, StoreError> {
        let mut inner = self.lock();
        let results = reports
            .into_iter()
            .map(|(lock, report)| {
                if !inner.holds(lock, now) {
                    return Reported::LockLost;
                }
                let job = inner.live.get_mut(&lock.job).expect("held lock, live job");
                job.history.extend(report.attempt_record(job.attempt, now));
                if job.cancel_requested {
                    return Reported::Ended(Box::new(inner.end(lock.job, Outcome::Cancelled, now, self.retained)));
                }
                match report {
                    Report::Completed { output, .. } => Reported::Ended(Box::new(inner.end(
                        lock.job,
                        Outcome::Completed { output },
                        now,
                        self.retained,
                    ))),
                    Report::End { outcome, .. } => {
                        Reported::Ended(Box::new(inner.end(lock.job, outcome, now, self.retained)))
                    }
                    Report::ReArm { fault, not_before, .. } => {
                        let expires_at = job.lock.as_ref().map(|l| l.expires_at).expect("held lock");
                        job.attempt += 1;
                        job.last_fault = Some(fault);
                        inner.locks.remove(&(expires_at, lock.job));
                        inner.arm(lock.job, Some(not_before), now);
                        Reported::ReArmed
                    }
                    Report::Release => {
                        let expires_at = job.lock.as_ref().map(|l| l.expires_at).expect("held lock");
                        inner.locks.remove(&(expires_at, lock.job));
                        inner.arm(lock.job, None, now);
                        Reported::Released
                    }
                }
            })
            .collect();
        Ok(results)
    }

    fn extend_lock(&self, lock: Lock, until: SystemTime, now: SystemTime) -> Result<bool, StoreError> {
        let mut inner = self.lock();
        if !inner.holds(lock, now) {
            return Ok(false);
        }
        let held = inner.live.get_mut(&lock.job).and_then(|job| job.lock.as_mut()).expect("held lock");
        let old = std::mem::replace(&mut held.expires_at, until);
        inner.locks.remove(&(old, lock.job));
        inner.locks.insert((until, lock.job));
        Ok(true)
    }

    fn cancel(&self, id: JobId, now: SystemTime) -> Result<CancelResult, StoreError> {
        let mut inner = self.lock();
        let Some(job) = inner.live.get_mut(&id) else {
            return Ok(if inner.ended.contains_key(&id) { CancelResult::AlreadyEnded } else { CancelResult::NotFound });
        };
        if job.state == JobState::Running {
            job.cancel_requested = true;
            return Ok(CancelResult::Cancelling);
        }
        Ok(CancelResult::Cancelled(Box::new(inner.end(id, Outcome::Cancelled, now, self.retained))))
    }

    fn get(&self, id: JobId) -> Result<Option<JobRecord>, StoreError> {
        let inner = self.lock();
        Ok(inner.record(id).map(|record| JobRecord { attempts: inner.history(id), ..record }))
    }

    fn outcomes_after(&self, after: u64, limit: usize) -> Result<Vec<TerminalOutcome>, StoreError> {
        let inner = self.lock();
        let start = inner.log.partition_point(|o| o.seq <= after);
        Ok(inner.log.iter().skip(start).take(limit).cloned().collect())
    }

    fn outcome_head(&self) -> Result<u64, StoreError> {
        Ok(self.lock().log.back().map_or(0, |o| o.seq))
    }

    fn depths(&self) -> Result<Vec<(String, Depth)>, StoreError> {
        let inner = self.lock();
        let mut depths: Vec<_> = inner.depths.iter().map(|(t, d)| (t.clone(), *d)).collect();
        depths.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(depths)
    }
}

impl Queries for MemoryStore {
    fn list(&self, filter: &ListFilter) -> Result<Vec<JobRecord>, StoreError> {
        let inner = self.lock();
        let mut ids: Vec<JobId> = inner.live.keys().chain(inner.ended.keys()).copied().collect();
        ids.sort_unstable_by(|a, b| b.cmp(a));
        Ok(ids
            .into_iter()
            .filter_map(|id| inner.record(id))
            .filter(|r| filter.before.is_none_or(|before| r.id < before) && filter.matches(r))
            .take(filter.limit.unwrap_or(100))
            .collect())
    }

    fn input(&self, id: JobId) -> Result<Option<Vec<u8>>, StoreError> {
        let inner = self.lock();
        let live = inner.live.get(&id).map(|job| job.input.clone());
        Ok(live.or_else(|| inner.ended.get(&id)?.input.clone()))
    }
}

impl Incidents for MemoryStore {
    fn retry_incident(&self, id: JobId, now: SystemTime) -> Result<RetryIncidentResult, StoreError> {
        let mut inner = self.lock();
        if !inner.incidents.remove(&id) {
            let known = inner.live.contains_key(&id) || inner.ended.contains_key(&id);
            return Ok(if known { RetryIncidentResult::NotAnIncident } else { RetryIncidentResult::NotFound });
        }
        let ended = inner.ended.remove(&id).expect("an incident is kept");
        let (record, history) = (ended.record, ended.history);
        let input = ended.input.expect("an incident keeps its input");
        inner.live.insert(
            id,
            Live {
                topic: record.topic,
                input,
                policy: record.policy.continued(record.attempt),
                attempt: record.attempt + 1,
                enqueued_at: record.enqueued_at,
                state: JobState::Terminal,
                not_before: None,
                lock: None,
                last_fault: record.last_fault,
                cancel_requested: false,
                history,
                keep_input: ended.keep_input,
                priority: record.priority,
            },
        );
        inner.arm(id, None, now);
        Ok(RetryIncidentResult::Requeued)
    }

    fn open_incidents(&self) -> Result<Vec<JobRecord>, StoreError> {
        let inner = self.lock();
        Ok(inner.incidents.iter().filter_map(|id| inner.record(*id)).collect())
    }

    fn open_incident_counts(&self) -> Result<Vec<(String, u64)>, StoreError> {
        let inner = self.lock();
        let mut counts = std::collections::BTreeMap::<String, u64>::new();
        for record in inner.incidents.iter().filter_map(|id| inner.record(*id)) {
            *counts.entry(record.topic).or_default() += 1;
        }
        Ok(counts.into_iter().collect())
    }

    fn discard_incident(&self, id: JobId) -> Result<DiscardResult, StoreError> {
        let mut inner = self.lock();
        if !inner.incidents.remove(&id) {
            let known = inner.live.contains_key(&id) || inner.ended.contains_key(&id);
            return Ok(if known { DiscardResult::NotAnIncident } else { DiscardResult::NotFound });
        }
        if let Some(ended) = inner.ended.get_mut(&id) {
            ended.incident = None;
            if !ended.keep_input {
                ended.input = None;
            }
        }
        Ok(DiscardResult::Discarded)
    }
}

impl Pauses for MemoryStore {
    fn set_paused(&self, topic: &str, paused: bool) -> Result<bool, StoreError> {
        let mut inner = self.lock();
        Ok(if paused { inner.paused.insert(topic.to_owned()) } else { inner.paused.remove(topic) })
    }

    fn paused(&self) -> Result<Vec<String>, StoreError> {
        Ok(self.lock().paused.iter().cloned().collect())
    }
}

impl Pruning for MemoryStore {
    fn prune(&self, retention: &Retention, now: SystemTime, batch: usize) -> Result<Pruned, StoreError> {
        let mut inner = self.lock();
        let expired: Vec<(u64, JobId)> = inner
            .log
            .iter()
            .filter(|o| o.finished_at + retention.of(o.outcome.kind()) <= now && !inner.open_incident(o.job_id, o.seq))
            .take(batch)
            .map(|o| (o.seq, o.job_id))
            .collect();
        let seqs: BTreeSet<u64> = expired.iter().map(|(seq, _)| *seq).collect();
        inner.log.retain(|o| !seqs.contains(&o.seq));
        let mut gone = BTreeSet::new();
        for (seq, job) in &expired {
            if inner.ended.get(job).is_some_and(|e| e.seq == *seq) {
                inner.ended.remove(job);
            }
            if !inner.ended.contains_key(job) && !inner.live.contains_key(job) {
                gone.insert(*job);
            }
            inner.pruned_through = inner.pruned_through.max(*seq);
        }
        let keys = inner.keys.len();
        inner.keys.retain(|_, job| !gone.contains(job));
        Ok(Pruned { outcomes: expired.len() as u64, keys: (keys - inner.keys.len()) as u64 })
    }

    fn pruned_through(&self) -> Result<u64, StoreError> {
        Ok(self.lock().pruned_through)
    }
}

impl Versions for MemoryStore {
    fn put_version(&self, put: &VersionToKeep<'_>) -> Result<(), StoreError> {
        let VersionToKeep { topic, version, component, config, keep } = *put;
        let mut inner = self.lock();
        let versions = inner.versions.entry(topic.to_owned()).or_insert_with(|| TopicVersions {
            current: version.digest.clone(),
            config: None,
            rolled_back: None,
            kept: Vec::new(),
        });
        versions.kept.retain(|(v, _)| v.digest != version.digest);
        versions.kept.push((version.clone(), component.into()));
        versions.current = version.digest.clone();
        versions.rolled_back = None;
        if config {
            versions.config = Some(version.digest.clone());
        }
        let excess = versions.kept.len().saturating_sub(keep.max(1));
        versions.kept.drain(..excess);
        Ok(())
    }

    fn set_current_version(&self, topic: &str, version: &StoredVersion) -> Result<bool, StoreError> {
        let mut inner = self.lock();
        let Some(versions) = inner.versions.get_mut(topic) else { return Ok(false) };
        if !versions.kept.iter().any(|(v, _)| v.digest == version.digest) {
            return Ok(false);
        }
        versions.current = version.digest.clone();
        versions.rolled_back = Some(Rollback { by: version.stamp.by.clone(), at: version.stamp.at });
        Ok(true)
    }

    fn current_versions(&self) -> Result<Vec<TopicVersion>, StoreError> {
        let inner = self.lock();
        let mut all: Vec<TopicVersion> = inner
            .versions
            .iter()
            .map(|(topic, v)| TopicVersion {
                topic: topic.clone(),
                current: v.current.clone(),
                config: v.config.clone(),
                rolled_back: v.rolled_back.clone(),
            })
            .collect();
        all.sort_by(|a, b| a.topic.cmp(&b.topic));
        Ok(all)
    }

    fn kept_versions(&self, topic: &str) -> Result<Vec<StoredVersion>, StoreError> {
        let inner = self.lock();
        Ok(inner.versions.get(topic).map_or_else(Vec::new, |v| v.kept.iter().rev().map(|(v, _)| v.clone()).collect()))
    }

    fn version_component(&self, topic: &str, digest: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let inner = self.lock();
        let kept = inner.versions.get(topic).and_then(|v| v.kept.iter().find(|(v, _)| v.digest == digest));
        Ok(kept.map(|(_, component)| component.to_vec()))
    }
}
