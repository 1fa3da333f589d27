//! A dispatcher on the in-memory store with a manual clock and a collecting
//! sink, for dispatcher tests: time moves only when a test moves it.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use husk_host::classify::{ErrorMapper, Rule, Rules};
use husk_host::clock::ManualClock;
use husk_host::dispatch::{Dispatcher, JobResult, TopicPolicy};
use husk_host::fault::Fault;
use husk_host::outcome::{CollectingSink, Outcome, TerminalOutcome};
use husk_host::retry::RetryPolicySpec;
use husk_host::store::{JobId, JobRecord, LockedJob, MemoryStore, Reported};

/// Lock duration of every fetch in these tests.
pub const LOCK: Duration = Duration::from_secs(30);

pub struct Rig {
    pub clock: ManualClock,
    pub sink: Arc<CollectingSink>,
    pub dispatcher: Arc<Dispatcher>,
    pub stop: AtomicBool,
}

impl Rig {
    /// A rig with an engine-wide default retry policy (or none).
    pub fn new(default_retry: Option<RetryPolicySpec>) -> Self {
        let clock = ManualClock::new();
        let sink = Arc::new(CollectingSink::new());
        let dispatcher =
            Dispatcher::new(Arc::new(MemoryStore::new()), Arc::new(clock.clone()), sink.clone(), default_retry);
        Self { clock, sink, dispatcher, stop: AtomicBool::new(false) }
    }

    /// A rig with one topic `t` using `retry` and no mapper.
    pub fn with_topic(retry: RetryPolicySpec) -> Self {
        let rig = Self::new(None);
        rig.dispatcher.set_topic("t", TopicPolicy { retry: Some(retry), mapper: None });
        rig
    }

    pub fn enqueue(&self, topic: &str) -> JobId {
        self.dispatcher.enqueue(topic, b"{}".to_vec()).unwrap()
    }

    /// Fetches without waiting.
    pub fn fetch(&self, topic: &str, max: usize) -> Vec<LockedJob> {
        self.dispatcher.fetch("w", &[topic.to_owned()], max, LOCK, Duration::ZERO, &self.stop).unwrap()
    }

    /// Fetches exactly one job.
    pub fn fetch_one(&self, topic: &str) -> LockedJob {
        let mut jobs = self.fetch(topic, 1);
        assert_eq!(jobs.len(), 1, "expected one fetchable job");
        jobs.remove(0)
    }

    pub fn fail(&self, job: &LockedJob, code: &str) -> Reported {
        self.dispatcher.report(job, JobResult::Fault(Fault::new(code, "")), Some("v1")).unwrap()
    }

    pub fn complete(&self, job: &LockedJob) -> Reported {
        self.dispatcher.report(job, JobResult::Output(b"\"done\"".to_vec()), Some("v1")).unwrap()
    }

    pub fn get(&self, id: JobId) -> JobRecord {
        self.dispatcher.store().get(id).unwrap().unwrap()
    }

    /// The outcomes delivered to the sink for `id`.
    pub fn outcomes_of(&self, id: JobId) -> Vec<TerminalOutcome> {
        self.sink.outcomes().into_iter().filter(|o| o.job_id == id).collect()
    }

    /// The one outcome delivered for `id`.
    pub fn outcome_of(&self, id: JobId) -> Outcome {
        let outcomes = self.outcomes_of(id);
        assert_eq!(outcomes.len(), 1, "expected exactly one outcome for job {id}: {outcomes:?}");
        outcomes[0].outcome.clone()
    }
}

/// A rules mapper from TOML-like rule values.
pub fn rules(rules: serde_json::Value) -> ErrorMapper {
    let rules: Vec<Rule> = serde_json::from_value(rules).unwrap();
    ErrorMapper::Rules(Rules::new(rules).unwrap())
}
