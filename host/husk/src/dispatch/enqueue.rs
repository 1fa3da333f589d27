//! Enqueueing: jobs of a registered topic, with their retry policy
//! resolved, into the store; counted, and their topic's fetchers woken,
//! once they are committed.

use super::*;

impl Dispatcher {
    /// Enqueues one job.
    ///
    /// # Errors
    ///
    /// [`EnqueueError`] for an unknown topic or a store failure.
    pub fn enqueue(&self, topic: &str, input: Vec<u8>) -> Result<JobId, EnqueueError> {
        Ok(self.enqueue_many(topic, vec![input], None)?[0])
    }

    /// Enqueues jobs of one topic, not to run before `not_before`.
    ///
    /// # Errors
    ///
    /// [`EnqueueError`] for an unknown topic or a store failure; nothing is
    /// enqueued then.
    pub fn enqueue_many(
        &self,
        topic: &str,
        inputs: Vec<Vec<u8>>,
        not_before: Option<SystemTime>,
    ) -> Result<Vec<JobId>, EnqueueError> {
        let policy = self.topic_retry(topic)?;
        let jobs: Vec<NewJob> = inputs
            .into_iter()
            .map(|input| NewJob { topic: topic.to_owned(), input, policy, not_before, key: None })
            .collect();
        Ok(self.add(jobs)?.into_iter().map(|e| e.id).collect())
    }

    /// Enqueues one job with an optional idempotency key: when a job
    /// already has `key` (live or ended), nothing is enqueued and that job
    /// is returned, `created: false`.
    ///
    /// # Errors
    ///
    /// [`EnqueueError`] for an unknown topic or a store failure; nothing is
    /// enqueued then.
    pub fn enqueue_keyed(&self, topic: &str, input: Vec<u8>, key: Option<String>) -> Result<Enqueued, EnqueueError> {
        Ok(self.enqueue_batch(topic, vec![(input, key)])?.remove(0))
    }

    /// Enqueues jobs of one topic in one step, each an input with an
    /// optional idempotency key, all or none: one [`Enqueued`] per job, in
    /// order. A key already taken — by an earlier job, or earlier in the
    /// batch — enqueues nothing and names that job (`created: false`).
    ///
    /// # Errors
    ///
    /// [`EnqueueError`] for an unknown topic or a store failure; nothing is
    /// enqueued then.
    pub fn enqueue_batch(
        &self,
        topic: &str,
        jobs: Vec<(Vec<u8>, Option<String>)>,
    ) -> Result<Vec<Enqueued>, EnqueueError> {
        let jobs = self.new_jobs(topic, jobs)?;
        Ok(self.add(jobs)?)
    }

    /// Whether [`Dispatcher::enqueue_batch_async`] waits without a thread
    /// of its own: the store enqueues in the background
    /// ([`Behaviour::enqueues_in_background`](crate::store::Behaviour::enqueues_in_background)).
    pub fn enqueues_in_background(&self) -> bool {
        self.store.behaviour().enqueues_in_background
    }

    /// [`Dispatcher::enqueue_batch`] for a caller on a tokio runtime. On a
    /// store that enqueues in the background no thread waits for the
    /// commit, and the jobs are counted and their topic's fetchers woken on
    /// the store's thread; on any other store the call runs on tokio's
    /// blocking pool. Either way a caller that stops waiting loses only the
    /// answer.
    ///
    /// # Errors
    ///
    /// As [`Dispatcher::enqueue_batch`].
    pub async fn enqueue_batch_async(
        self: &Arc<Self>,
        topic: &str,
        jobs: Vec<(Vec<u8>, Option<String>)>,
    ) -> Result<Vec<Enqueued>, EnqueueError> {
        if !self.enqueues_in_background() {
            let (dispatcher, topic) = (self.clone(), topic.to_owned());
            return tokio::task::spawn_blocking(move || dispatcher.enqueue_batch(&topic, jobs)).await.map_err(|e| {
                EnqueueError::Store(StoreError::Failed {
                    store: "the store".into(),
                    message: format!("the enqueue's thread failed: {e}"),
                    source: None,
                })
            })?;
        }
        let jobs = self.new_jobs(topic, jobs)?;
        let (sent, answer) = tokio::sync::oneshot::channel();
        let (dispatcher, topic) = (self.clone(), topic.to_owned());
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
            source: None,
        })?;
        Ok(result?)
    }

    /// [`Dispatcher::enqueue_batch`] within a tenant's `max_queued`, counted
    /// in a store several processes share (see [`Shared::enqueue_capped`](crate::store::Shared::enqueue_capped)).
    ///
    /// # Errors
    ///
    /// As [`Dispatcher::enqueue_batch`]; [`StoreError::Unsupported`] for a
    /// store that is not [`Shared`](crate::store::Shared).
    pub fn enqueue_capped(
        &self,
        topic: &str,
        jobs: Vec<(Vec<u8>, Option<String>)>,
        cap: &QueueCap<'_>,
    ) -> Result<Capped, EnqueueError> {
        let jobs = self.new_jobs(topic, jobs)?;
        let shared = self.store.supports().shared.ok_or(StoreError::Unsupported { capability: "shared" })?;
        let capped = shared.enqueue_capped(jobs, cap, self.clock.now())?;
        if let Capped::Enqueued(enqueued) = &capped {
            self.created(topic, enqueued);
        }
        Ok(capped)
    }

    /// Jobs of a registered `topic` to store: each an input and a key.
    fn new_jobs(&self, topic: &str, jobs: Vec<(Vec<u8>, Option<String>)>) -> Result<Vec<NewJob>, EnqueueError> {
        let policy = self.topic_retry(topic)?;
        Ok(jobs
            .into_iter()
            .map(|(input, key)| NewJob { topic: topic.to_owned(), input, policy, not_before: None, key })
            .collect())
    }

    /// The retry policy of a new job of a registered `topic`.
    fn topic_retry(&self, topic: &str) -> Result<RetryPolicySpec, EnqueueError> {
        let policy = self.topic(topic).ok_or_else(|| EnqueueError::UnknownTopic(topic.to_owned()))?;
        Ok(self.resolve_retry(&policy))
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
