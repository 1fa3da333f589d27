//! What an operator's tools (the HTTP API, the dashboard, the CLI through
//! them) read and do to jobs, through the host: nothing outside the
//! library reaches the dispatcher or the store for it. A read or an action
//! the store does not support is [`StoreError::Unsupported`].

use super::Host;
use std::sync::Arc;

use crate::dispatch::{Snapshot, Totals};
use crate::outcome::TerminalOutcome;
use crate::store::{CancelResult, DiscardResult, JobId, JobRecord, ListFilter, RetryIncidentResult, StoreError};

impl Host {
    /// One job, live or ended, with its finished attempts.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    pub fn job(&self, id: JobId) -> Result<Option<JobRecord>, StoreError> {
        self.dispatcher.store().get(id)
    }

    /// The input of job `id` while the store keeps it (see
    /// [`Queries::input`](crate::store::Queries::input)); `None` from a
    /// store without [`Queries`](crate::store::Queries), which keeps none
    /// to show.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    pub fn input(&self, id: JobId) -> Result<Option<Vec<u8>>, StoreError> {
        match self.dispatcher.store().queries() {
            Ok(queries) => queries.input(id),
            Err(StoreError::Unsupported { .. }) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Jobs matching `filter`, newest first.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails or lists nothing.
    pub fn jobs(&self, filter: &ListFilter) -> Result<Vec<JobRecord>, StoreError> {
        self.dispatcher.store().queries()?.list(filter)
    }

    /// Open incidents: jobs that ended `Failed`, neither retried nor
    /// discarded.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails or keeps no incidents.
    pub fn incidents(&self) -> Result<Vec<JobRecord>, StoreError> {
        self.dispatcher.store().incidents()?.open_incidents()
    }

    /// Re-queues an open incident with a fresh attempt budget.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails or keeps no incidents.
    pub fn retry_incident(&self, id: JobId) -> Result<RetryIncidentResult, StoreError> {
        self.dispatcher.retry_incident(id)
    }

    /// Closes an open incident without retrying it: it leaves the incident
    /// list, and its outcome is pruned after
    /// [`Retention::failed`](crate::store::Retention::failed).
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails or keeps no incidents.
    pub fn discard_incident(&self, id: JobId) -> Result<DiscardResult, StoreError> {
        self.dispatcher.discard_incident(id)
    }

    /// Cancels a job: a queued or gated one ends now, a running one at its
    /// next epoch tick.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    pub fn cancel(&self, id: JobId) -> Result<CancelResult, StoreError> {
        self.dispatcher.cancel(id)
    }

    /// Terminal outcomes after the cursor `after`, in order, at most
    /// `limit`.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    pub fn outcomes_after(&self, after: u64, limit: usize) -> Result<Vec<TerminalOutcome>, StoreError> {
        self.dispatcher.store().outcomes_after(after, limit)
    }

    /// The largest outcome cursor the store can return now (see
    /// [`JobStore::outcome_head`](crate::store::JobStore::outcome_head)).
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    pub fn outcome_head(&self) -> Result<u64, StoreError> {
        self.dispatcher.store().outcome_head()
    }

    /// The highest outcome sequence number pruned so far (0: none, also
    /// for a store that prunes nothing): a cursor below it may have missed
    /// outcomes.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    pub fn pruned_through(&self) -> Result<u64, StoreError> {
        match self.dispatcher.store().supports().pruning {
            Some(pruning) => pruning.pruned_through(),
            None => Ok(0),
        }
    }

    /// The retry policy a new job of `topic` gets: the topic's own, else
    /// the engine-wide default, else the built-in one.
    pub fn retry_of(&self, topic: &super::Topic) -> crate::retry::RetryPolicySpec {
        crate::retry::RetryPolicySpec::resolve(topic.retry(), self.dispatcher.default_retry())
    }

    /// What this process's dispatcher counted since it started.
    pub fn totals(&self) -> Totals {
        self.dispatcher.totals()
    }

    /// Counts the store's live jobs into a fresh snapshot now, and returns
    /// it (the publisher does so every [`SNAPSHOT_EVERY`](super::SNAPSHOT_EVERY)
    /// while workers run).
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    pub fn publish_snapshot(&self) -> Result<Arc<Snapshot>, StoreError> {
        self.dispatcher.publish_snapshot()
    }
}
