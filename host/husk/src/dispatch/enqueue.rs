//! Enqueueing: an [`Enqueue`] request — jobs of a registered topic, with
//! their retry policy resolved — into the store; counted, and their topic's
//! fetchers woken, once they are committed.

use super::*;

/// Jobs to enqueue on one topic, in one transaction, all or none: each an
/// [`EnqueueJob`]. A key already taken — by an earlier job, live or ended,
/// or earlier in the request — enqueues nothing and names that job
/// (`created: false`). One request type for one job or many, keyed or not,
/// scheduled or not, waited for on a thread or awaited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enqueue {
    /// The topic.
    pub topic: String,
    /// The jobs, in order.
    pub jobs: Vec<EnqueueJob>,
}

/// One job of an [`Enqueue`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnqueueJob {
    /// Its input (by convention JSON).
    pub input: Vec<u8>,
    /// An idempotency key (see [`NewJob::key`]); `None`: always enqueued.
    pub key: Option<String>,
    /// Not to run before this time (a scheduled job); `None` or a time
    /// already past: as soon as possible.
    pub not_before: Option<SystemTime>,
    /// Its priority within the topic ([`NewJob::priority`]; default 0),
    /// clamped to [`PRIORITIES`].
    pub priority: i16,
}

impl From<(Vec<u8>, Option<String>)> for EnqueueJob {
    fn from((input, key): (Vec<u8>, Option<String>)) -> Self {
        Self { input, key, ..Self::default() }
    }
}

impl Enqueue {
    /// One job without a key.
    pub fn one(topic: impl Into<String>, input: impl Into<Vec<u8>>) -> Self {
        Self::batch(topic, vec![(input.into(), None)])
    }

    /// One job with an idempotency key (or none).
    pub fn keyed(topic: impl Into<String>, input: impl Into<Vec<u8>>, key: Option<String>) -> Self {
        Self::batch(topic, vec![(input.into(), key)])
    }

    /// Jobs without keys.
    pub fn many(topic: impl Into<String>, inputs: impl IntoIterator<Item = Vec<u8>>) -> Self {
        Self::batch(topic, inputs.into_iter().map(|input| (input, None)).collect())
    }

    /// Jobs, each with an idempotency key or none.
    pub fn batch(topic: impl Into<String>, jobs: Vec<(Vec<u8>, Option<String>)>) -> Self {
        Self::jobs(topic, jobs.into_iter().map(EnqueueJob::from).collect())
    }

    /// Jobs, each as it says.
    pub fn jobs(topic: impl Into<String>, jobs: Vec<EnqueueJob>) -> Self {
        Self { topic: topic.into(), jobs }
    }

    /// The same jobs, none to run before `at`.
    #[must_use]
    pub fn not_before(mut self, at: SystemTime) -> Self {
        for job in &mut self.jobs {
            job.not_before = Some(at);
        }
        self
    }
}

/// Runs a blocking enqueue on tokio's blocking pool, for an async caller.
pub(crate) async fn on_blocking_thread<T: Send + 'static>(
    enqueue: impl FnOnce() -> Result<T, EnqueueError> + Send + 'static,
) -> Result<T, EnqueueError> {
    tokio::task::spawn_blocking(enqueue).await.map_err(|e| {
        EnqueueError::Store(StoreError::Failed {
            store: "the store".into(),
            message: format!("the enqueue's thread failed: {e}"),
            cause: None,
        })
    })?
}

impl Dispatcher {
    /// Enqueues one job: [`Dispatcher::submit`] of [`Enqueue::one`].
    ///
    /// # Errors
    ///
    /// [`EnqueueError`] for an unknown topic or a store failure.
    pub fn enqueue(&self, topic: &str, input: Vec<u8>) -> Result<JobId, EnqueueError> {
        Ok(self.submit(Enqueue::one(topic, input))?[0].id)
    }

    /// Enqueues `request`: one [`Enqueued`] per job, in order.
    ///
    /// # Errors
    ///
    /// [`EnqueueError`] for an unknown topic or a store failure; nothing is
    /// enqueued then.
    pub fn submit(&self, request: Enqueue) -> Result<Vec<Enqueued>, EnqueueError> {
        let jobs = self.new_jobs(request)?;
        Ok(self.add(jobs)?)
    }

    /// Whether [`Dispatcher::submit_async`] waits without a thread of its
    /// own: the store enqueues in the background
    /// ([`Behaviour::enqueues_in_background`](crate::store::Behaviour::enqueues_in_background)).
    pub fn enqueues_in_background(&self) -> bool {
        self.store.behaviour().enqueues_in_background
    }

    /// [`Dispatcher::submit`] for a caller on a tokio runtime. On a store
    /// that enqueues in the background no thread waits for the commit, and
    /// the jobs are counted and their topic's fetchers woken on the store's
    /// thread; on any other store the call runs on tokio's blocking pool.
    /// Either way a caller that stops waiting loses only the answer.
    ///
    /// # Errors
    ///
    /// As [`Dispatcher::submit`].
    pub async fn submit_async(self: &Arc<Self>, request: Enqueue) -> Result<Vec<Enqueued>, EnqueueError> {
        if !self.enqueues_in_background() {
            let dispatcher = self.clone();
            return on_blocking_thread(move || dispatcher.submit(request)).await;
        }
        let topic = request.topic.clone();
        let jobs = self.new_jobs(request)?;
        let (sent, answer) = tokio::sync::oneshot::channel();
        let dispatcher = self.clone();
        let done = move |result: Result<Vec<Enqueued>, StoreError>| {
            if let Ok(enqueued) = &result {
                dispatcher.created(&topic, enqueued);
            }
            // A caller that stopped waiting is told nothing.
            let _ = sent.send(result);
        };
        self.store.enqueue_then(jobs, self.clock.now(), Box::new(done));
        let result = answer.await.map_err(|_| StoreError::Failed {
            store: "the store".into(),
            message: "the enqueue ended without a result".into(),
            cause: None,
        })?;
        Ok(result?)
    }

    /// [`Dispatcher::submit`] within a tenant's `max_queued`, counted in a
    /// store several processes share (see
    /// [`Shared::enqueue_capped`](crate::store::Shared::enqueue_capped)).
    ///
    /// # Errors
    ///
    /// As [`Dispatcher::submit`]; [`StoreError::Unsupported`] for a store
    /// that is not [`Shared`](crate::store::Shared).
    pub(crate) fn submit_capped(&self, request: Enqueue, cap: &QueueCap<'_>) -> Result<Capped, EnqueueError> {
        let topic = request.topic.clone();
        let jobs = self.new_jobs(request)?;
        let shared = self.store.shared()?;
        let capped = shared.enqueue_capped(jobs, cap, self.clock.now())?;
        if let Capped::Enqueued(enqueued) = &capped {
            self.created(&topic, enqueued);
        }
        Ok(capped)
    }

    /// The jobs of a request to store, with their topic's retry policy and
    /// whether their inputs outlive them.
    fn new_jobs(&self, request: Enqueue) -> Result<Vec<NewJob>, EnqueueError> {
        let Enqueue { topic, jobs } = request;
        let topic_policy = self.topic(&topic).ok_or_else(|| EnqueueError::UnknownTopic(topic.clone()))?;
        let (policy, keep_input) = (self.resolve_retry(&topic_policy), !topic_policy.drop_input);
        Ok(jobs
            .into_iter()
            .map(|EnqueueJob { input, key, not_before, priority }| NewJob {
                topic: topic.clone(),
                input,
                policy,
                not_before,
                key,
                keep_input,
                priority: priority.clamp(*PRIORITIES.start(), *PRIORITIES.end()),
            })
            .collect())
    }

    /// Stores new jobs, in one store call with those of other threads
    /// enqueueing at the same moment unless the store groups its calls
    /// itself (see `combine`); counts, and wakes
    /// fetchers for, those created (a job whose key was taken adds nothing
    /// to fetch).
    fn add(&self, jobs: Vec<NewJob>) -> Result<Vec<Enqueued>, StoreError> {
        let Some(topic) = jobs.first().map(|job| job.topic.clone()) else { return Ok(Vec::new()) };
        debug_assert!(jobs.iter().all(|job| job.topic == topic), "one topic per call");
        let enqueued = self.combiner.enqueue(jobs, |jobs| self.store.enqueue(jobs, self.clock.now()))?;
        self.created(&topic, &enqueued);
        Ok(enqueued)
    }

    /// Counts the jobs of `topic` an enqueue created, and wakes that
    /// topic's fetchers if there are any.
    fn created(&self, topic: &str, enqueued: &[Enqueued]) {
        let created = enqueued.iter().filter(|e| e.created).count() as u64;
        if created > 0 {
            self.counters.enqueued(created);
            self.wakers.topic(topic, created);
        }
    }
}
