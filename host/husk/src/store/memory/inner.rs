//! The memory store's state and its bookkeeping: arming, ending, gates,
//! lock expiry and the records it answers with.

use std::time::SystemTime;

use serde_json::json;

use super::{Ended, Incident, Inner, Live, Ready};
use crate::fault::{Fault, codes};
use crate::outcome::{Outcome, TerminalOutcome};
use crate::retry::RetryPolicy;
use crate::store::{AttemptRecord, Depth, JobId, JobRecord, JobState, Lock, LockInfo, expired_attempt};
use crate::wire::epoch_millis;

impl Live {
    pub(super) fn record(&self, id: JobId) -> JobRecord {
        JobRecord {
            id,
            topic: self.topic.clone(),
            state: self.state,
            attempt: self.attempt,
            policy: self.policy,
            enqueued_at: self.enqueued_at,
            not_before: self.not_before,
            lock: self.lock.as_ref().map(|l| LockInfo { worker: l.worker.clone(), expires_at: l.expires_at }),
            last_fault: self.last_fault.clone(),
            cancel_requested: self.cancel_requested,
            outcome: None,
            discarded: false,
            attempts: Vec::new(),
            priority: self.priority,
        }
    }

    /// Attempts made so far: the current one counts once it has started.
    pub(super) fn attempts_made(&self) -> u32 {
        if self.state == JobState::Running { self.attempt } else { self.attempt.saturating_sub(1) }
    }
}

impl Inner {
    pub(super) fn depth(&mut self, topic: &str) -> &mut Depth {
        if !self.depths.contains_key(topic) {
            self.depths.insert(topic.to_owned(), Depth::default());
        }
        self.depths.get_mut(topic).expect("inserted above")
    }

    pub(super) fn count(&mut self, topic: &str, state: JobState, delta: i64) {
        let depth = self.depth(topic);
        let counter = match state {
            JobState::Queued => &mut depth.queued,
            JobState::Gated => &mut depth.gated,
            JobState::Running => &mut depth.running,
            JobState::Terminal => return,
        };
        *counter = counter.saturating_add_signed(delta);
    }

    /// Puts a live, unlocked job in the ready queue or behind its gate.
    pub(super) fn arm(&mut self, id: JobId, not_before: Option<SystemTime>, now: SystemTime) {
        let job = self.live.get_mut(&id).expect("arming a live job");
        let old = job.state;
        let topic = job.topic.clone();
        job.lock = None;
        match not_before.filter(|gate| *gate > now) {
            Some(gate) => {
                job.state = JobState::Gated;
                job.not_before = Some(gate);
                self.gates.insert((gate, id));
            }
            None => {
                job.state = JobState::Queued;
                job.not_before = None;
                let ready = Ready(std::cmp::Reverse(job.priority), id);
                self.ready.entry(topic.clone()).or_default().insert(ready);
            }
        }
        let new = self.live[&id].state;
        if old != new {
            self.count(&topic, old, -1);
            self.count(&topic, new, 1);
        }
    }

    /// Ends a live job with `outcome` and returns its terminal record.
    pub(super) fn end(&mut self, id: JobId, outcome: Outcome, now: SystemTime, retained: usize) -> TerminalOutcome {
        let job = self.live.remove(&id).expect("ending a live job");
        self.count(&job.topic, job.state, -1);
        match job.state {
            JobState::Gated => {
                if let Some(gate) = job.not_before {
                    self.gates.remove(&(gate, id));
                }
            }
            JobState::Running => {
                if let Some(lock) = &job.lock {
                    self.locks.remove(&(lock.expires_at, id));
                }
            }
            JobState::Queued | JobState::Terminal => {}
        }
        self.next_seq += 1;
        let terminal = TerminalOutcome {
            seq: self.next_seq,
            job_id: id,
            topic: job.topic.clone(),
            attempts: job.attempts_made(),
            enqueued_at: job.enqueued_at,
            finished_at: now,
            outcome,
        };
        let mut record = job.record(id);
        // As the SQL stores keep it: a failure's own last fault.
        if let Outcome::Failed { last_fault, .. } = &terminal.outcome {
            record.last_fault = Some(last_fault.clone());
        }
        record.state = JobState::Terminal;
        record.attempt = terminal.attempts;
        record.not_before = None;
        record.lock = None;
        let incident =
            matches!(terminal.outcome, Outcome::Failed { .. }).then(|| Incident { outcome: terminal.clone() });
        if incident.is_some() {
            self.incidents.insert(id);
        }
        let input = (job.keep_input || incident.is_some()).then_some(job.input);
        let ended =
            Ended { record, history: job.history, seq: terminal.seq, incident, input, keep_input: job.keep_input };
        self.ended.insert(id, ended);
        self.log.push_back(terminal.clone());
        while self.log.len() > retained {
            if let Some(old) = self.log.pop_front() {
                self.pruned_through = self.pruned_through.max(old.seq);
                if self.ended.get(&old.job_id).is_some_and(|e| e.seq == old.seq && e.incident.is_none()) {
                    self.ended.remove(&old.job_id);
                }
            }
        }
        terminal
    }

    /// Whether the outcome `seq` of `job` is an open incident.
    pub(super) fn open_incident(&self, job: JobId, seq: u64) -> bool {
        self.ended.get(&job).is_some_and(|e| e.seq == seq && e.incident.is_some())
    }

    /// Whether `lock` is held, unexpired, on a running job.
    pub(super) fn holds(&self, lock: Lock, now: SystemTime) -> bool {
        self.live.get(&lock.job).is_some_and(|job| {
            job.state == JobState::Running
                && job.lock.as_ref().is_some_and(|held| held.token == lock.token && held.expires_at > now)
        })
    }

    pub(super) fn open_gates(&mut self, now: SystemTime) {
        while let Some(&(gate, id)) = self.gates.first() {
            if gate > now {
                break;
            }
            self.gates.pop_first();
            self.arm(id, None, now);
        }
    }

    /// Reclaims jobs whose lock expired: each is a failed attempt with fault
    /// `husk.lock-expired`, re-armed by its policy or ended `Failed`.
    pub(super) fn reclaim_expired(&mut self, now: SystemTime, retained: usize, ended: &mut Vec<TerminalOutcome>) {
        while let Some(&(expired_at, id)) = self.locks.first() {
            if expired_at > now {
                break;
            }
            self.locks.pop_first();
            let job = self.live.get_mut(&id).expect("a locked job is live");
            let worker = job.lock.take().map(|l| l.worker).unwrap_or_default();
            let fault = Fault::json(
                codes::LOCK_EXPIRED,
                &json!({
                    "worker": worker,
                    "attempt": job.attempt,
                    "expired_at_ms": epoch_millis::to_millis(expired_at),
                }),
            );
            job.last_fault = Some(fault.clone());
            job.history.push(expired_attempt(job.attempt, &fault, now));
            let diagnostic = format!("lock of worker {worker} expired before it reported attempt {}", job.attempt);
            if job.cancel_requested {
                ended.push(self.end(id, Outcome::Cancelled, now, retained));
                continue;
            }
            match job.policy.retry(job.attempt, &diagnostic) {
                Some(backoff) => {
                    job.attempt += 1;
                    self.arm(id, Some(expired_at + backoff), now);
                }
                None => {
                    let outcome = Outcome::Failed {
                        topic: job.topic.clone(),
                        attempts: job.attempt,
                        last_fault: fault,
                        diagnostic,
                        plugin_version: None,
                    };
                    ended.push(self.end(id, outcome, now, retained));
                }
            }
        }
    }

    pub(super) fn next_wake(&self) -> Option<SystemTime> {
        let gate = self.gates.first().map(|(t, _)| *t);
        let lock = self.locks.first().map(|(t, _)| *t);
        gate.into_iter().chain(lock).min()
    }

    /// The record of a job, without its attempts (see [`JobStore::get`](crate::store::JobStore::get)).
    pub(super) fn record(&self, id: JobId) -> Option<JobRecord> {
        if let Some(job) = self.live.get(&id) {
            return Some(job.record(id));
        }
        let ended = self.ended.get(&id)?;
        let mut record = ended.record.clone();
        record.outcome = match &ended.incident {
            Some(incident) => Some(incident.outcome.clone()),
            None => self.log.binary_search_by_key(&ended.seq, |o| o.seq).ok().map(|i| self.log[i].clone()),
        };
        // A failure without its open incident was discarded.
        record.discarded = ended.incident.is_none()
            && record.outcome.as_ref().is_some_and(|o| matches!(o.outcome, crate::outcome::Outcome::Failed { .. }));
        Some(record)
    }

    /// A job's finished attempts.
    pub(super) fn history(&self, id: JobId) -> Vec<AttemptRecord> {
        match (self.live.get(&id), self.ended.get(&id)) {
            (Some(job), _) => job.history.clone(),
            (None, Some(ended)) => ended.history.clone(),
            (None, None) => Vec::new(),
        }
    }
}
