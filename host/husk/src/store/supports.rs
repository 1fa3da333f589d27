//! What a store may support beyond the queue ([`JobStore`]): one trait per
//! capability, which a store implements and names in
//! [`JobStore::supports`]. The memory and SQLite stores support all but
//! [`Shared`]; the PostgreSQL store all six. The conformance suite checks
//! the queue first, then each capability a store names.

use std::time::SystemTime;

#[cfg(doc)]
use super::JobStore;
use super::{Enqueued, JobId, JobRecord, JobState, NewJob, Pruned, Retention, StoreError};
use crate::outcome::OutcomeKind;
use crate::store::DiscardResult;
use crate::versions::{Rollback, Stamp};

/// A tenant's `max_queued`, as [`Shared::enqueue_capped`] checks it.
#[derive(Debug, Clone, Copy)]
pub struct QueueCap<'a> {
    /// The tenant (enqueues of one tenant are serialized).
    pub tenant: &'a str,
    /// The tenant's topics, whose live jobs count.
    pub topics: &'a [String],
    /// The most live jobs the tenant may have.
    pub max: u64,
}

/// What [`Shared::enqueue_capped`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Capped {
    /// The jobs were enqueued (or their keys' jobs returned), one
    /// [`Enqueued`] per job, in order.
    Enqueued(Vec<Enqueued>),
    /// The jobs would take the tenant past its limit: nothing was
    /// enqueued.
    Full {
        /// The tenant's live jobs, counted.
        live: u64,
    },
}

/// The result of [`Incidents::retry_incident`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetryIncidentResult {
    /// The job is queued again with a fresh attempt budget.
    Requeued,
    /// The job is not an open incident (never was, or already retried).
    NotAnIncident,
    /// No such job.
    NotFound,
}

/// Filter for [`Queries::list`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListFilter {
    /// Only jobs of this topic.
    pub topic: Option<String>,
    /// Only jobs in this state.
    pub state: Option<JobState>,
    /// Only live jobs past their first attempt (`true`) or on it (`false`):
    /// with [`JobState::Gated`], the jobs that wait for a retry or for
    /// their start. Ended jobs never match when it is set.
    pub retrying: Option<bool>,
    /// Only ended jobs whose failure was discarded (`true`), or every job
    /// but those (`false`).
    pub discarded: Option<bool>,
    /// At most this many, newest first (default 100).
    pub limit: Option<usize>,
    /// Only jobs older than this one (ids below it): the next page after a
    /// page that ended with it.
    pub before: Option<JobId>,
    /// Only ended jobs whose (latest) outcome is of this kind.
    pub outcome: Option<OutcomeKind>,
    /// Only jobs enqueued at or after this time.
    pub enqueued_after: Option<SystemTime>,
    /// Only jobs enqueued before this time.
    pub enqueued_before: Option<SystemTime>,
    /// Only jobs whose last fault's code contains this text (case
    /// sensitive); jobs without a fault never match.
    pub fault_code: Option<String>,
}

impl ListFilter {
    /// Whether `record` passes every condition of the filter but `limit`
    /// and `before` (how the memory store filters; the SQL stores say the
    /// same in their queries).
    pub fn matches(&self, record: &JobRecord) -> bool {
        let millis = crate::wire::epoch_millis::to_millis;
        self.topic.as_ref().is_none_or(|t| &record.topic == t)
            && self.state.is_none_or(|s| record.state == s)
            && self.retrying.is_none_or(|r| record.state != JobState::Terminal && (record.attempt > 1) == r)
            && self.discarded.is_none_or(|d| record.discarded == d)
            && self.outcome.is_none_or(|k| record.outcome.as_ref().is_some_and(|o| o.outcome.outcome_kind() == k))
            && self.enqueued_after.is_none_or(|t| millis(record.enqueued_at) >= millis(t))
            && self.enqueued_before.is_none_or(|t| millis(record.enqueued_at) < millis(t))
            && self
                .fault_code
                .as_ref()
                .is_none_or(|text| record.last_fault.as_ref().is_some_and(|f| f.code.contains(text.as_str())))
    }

    /// Whether only ended jobs can match (an outcome is asked for, or the
    /// terminal state).
    pub fn ended_only(&self) -> bool {
        self.outcome.is_some() || self.state == Some(JobState::Terminal) || self.discarded == Some(true)
    }

    /// Whether only live jobs can match (a live state is asked for, or
    /// `retrying`).
    pub fn live_only(&self) -> bool {
        self.retrying.is_some() || self.state.is_some_and(|s| s != JobState::Terminal)
    }
}

/// A plugin version the store keeps (see [`Versions::put_version`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredVersion {
    /// The component's SHA-256 (hex): the version's identity.
    pub digest: String,
    /// How, by whom and when it last became current.
    pub stamp: Stamp,
}

/// Which version of a topic is current, for every process sharing the
/// store (see [`Versions::current_versions`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicVersion {
    /// The topic.
    pub topic: String,
    /// The digest of its current version.
    pub current: String,
    /// The digest of the config file's component when a process last
    /// recorded it: a config file that changed since is deployed at start,
    /// one that did not leaves the current version alone.
    pub config: Option<String>,
    /// Who rolled back to the current version, and when; `None` when it
    /// became current by a deploy.
    pub rolled_back: Option<Rollback>,
}

/// What a store shared by several processes tells the dispatcher of this
/// one (PostgreSQL's `LISTEN/NOTIFY`). Implemented by the dispatcher.
pub trait StoreEvents: Send + Sync {
    /// Jobs may have become fetchable (another process enqueued or
    /// re-armed): waiting fetchers should look again.
    fn jobs_available(&self);
    /// Another process made `jobs` jobs of `topic` fetchable: wake that
    /// many of its waiting fetchers. By default, as [`jobs_available`].
    ///
    /// [`jobs_available`]: StoreEvents::jobs_available
    fn topic_jobs_available(&self, topic: &str, jobs: u64) {
        let _ = (topic, jobs);
        self.jobs_available();
    }
    /// How many fetchers of `topic` sleep in this process now, waiting for
    /// jobs: a store shared by processes need not wake other processes'
    /// fetchers for new jobs these will take. By default none.
    fn waiting_fetchers(&self, topic: &str) -> u64 {
        let _ = topic;
        0
    }
    /// Another process asked to cancel job `id`: interrupt it if it runs
    /// here.
    fn cancel_requested(&self, id: JobId);
}

/// Listing jobs and reading their inputs (the API's and the dashboard's job
/// list and job page).
pub trait Queries: Send + Sync {
    /// Jobs matching `filter`, newest first.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn list(&self, filter: &ListFilter) -> Result<Vec<JobRecord>, StoreError>;

    /// The input of job `id` while the store keeps it: while the job is
    /// live, while it is an open incident (kept for its retry), and after it
    /// ended as long as its outcome, unless the job was enqueued with
    /// [`NewJob::keep_input`] `false`.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn input(&self, id: JobId) -> Result<Option<Vec<u8>>, StoreError>;
}

/// Incidents: jobs that ended `Failed`, listed, retried with a fresh
/// attempt budget, or discarded.
pub trait Incidents: Send + Sync {
    /// Open incidents: jobs that ended `Failed` and were neither retried
    /// nor discarded.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn open_incidents(&self) -> Result<Vec<JobRecord>, StoreError>;

    /// How many open incidents each topic has (topics with none left out):
    /// a count for dashboards, without reading the incidents.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn open_incident_counts(&self) -> Result<Vec<(String, u64)>, StoreError>;

    /// Re-queues an open incident with a fresh attempt budget, its attempts
    /// numbered on ([`RetryPolicySpec::continued`](crate::retry::RetryPolicySpec::continued)).
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn retry_incident(&self, id: JobId, now: SystemTime) -> Result<RetryIncidentResult, StoreError>;

    /// Closes an open incident without retrying it (see [`DiscardResult`]).
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn discard_incident(&self, id: JobId) -> Result<DiscardResult, StoreError>;
}

/// Pausing topics, for every process sharing the store.
pub trait Pauses: Send + Sync {
    /// Pauses (`paused: true`) or resumes fetching of `topic`: a paused
    /// topic's jobs are not fetched (enqueues still land, running jobs
    /// finish, expired locks are still reclaimed), and a fetch of only
    /// paused topics says so ([`super::Fetched::paused`]). Returns whether
    /// the topic's state changed. The pause outlives a restart.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn set_paused(&self, topic: &str, paused: bool) -> Result<bool, StoreError>;

    /// The paused topics, sorted.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn paused(&self) -> Result<Vec<String>, StoreError>;
}

/// Pruning ended jobs past their retention, so the store stays bounded.
pub trait Pruning: Send + Sync {
    /// Deletes, at most `batch` at a time, the outcomes (with their
    /// histories, and the idempotency keys of their jobs) that ended longer
    /// ago than `retention` keeps them, as of `now`. Open incidents are
    /// never pruned. Call it again while it prunes a whole batch.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn prune(&self, retention: &Retention, now: SystemTime, batch: usize) -> Result<Pruned, StoreError>;

    /// The highest outcome sequence number pruned so far (0: none): a
    /// reader of the outcome log whose cursor is below it may have missed
    /// outcomes, and must start again from it.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn pruned_through(&self) -> Result<u64, StoreError>;
}

/// A plugin version to keep ([`Versions::put_version`]).
#[derive(Debug, Clone, Copy)]
pub struct VersionToKeep<'a> {
    /// The topic.
    pub topic: &'a str,
    /// The version: its digest and stamp.
    pub version: &'a StoredVersion,
    /// The component's bytes.
    pub component: &'a [u8],
    /// Whether it is the config file's component (remembered, see
    /// [`TopicVersion::config`]).
    pub config: bool,
    /// The most versions of the topic to keep (the current one always).
    pub keep: usize,
}

/// Kept plugin versions: deploys and rollbacks that outlive a restart and
/// reach every process sharing the store. Without it, a deployed version
/// lasts until the process ends.
pub trait Versions: Send + Sync {
    /// Keeps `put.version` of `put.topic` as its newest deploy and makes it
    /// the topic's current version, in one transaction, keeping at most
    /// `put.keep` versions of the topic (the current one always) and
    /// dropping the components of those deployed longest ago. A version
    /// already kept is deployed again: it becomes the newest.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails; nothing changed then.
    fn put_version(&self, put: &VersionToKeep<'_>) -> Result<(), StoreError>;

    /// Makes the kept version `version.digest` of `topic` current again (a
    /// rollback by `version.stamp.by` at `version.stamp.at`); `false` when
    /// it is not kept. The order of deploys and each version's own stamp do
    /// not change: a second rollback goes further back.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn set_current_version(&self, topic: &str, version: &StoredVersion) -> Result<bool, StoreError>;

    /// Every topic's current version.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn current_versions(&self) -> Result<Vec<TopicVersion>, StoreError>;

    /// `topic`'s current version; `None` before its first deploy.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn current_version(&self, topic: &str) -> Result<Option<TopicVersion>, StoreError> {
        Ok(self.current_versions()?.into_iter().find(|p| p.topic == topic))
    }

    /// The kept versions of `topic` in the order they were deployed, the
    /// newest first, each with the stamp of its deploy. After a rollback
    /// the current one ([`Versions::current_versions`]) is not the first.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn kept_versions(&self, topic: &str) -> Result<Vec<StoredVersion>, StoreError>;

    /// The component of the kept version `digest` of `topic`.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn version_component(&self, topic: &str, digest: &str) -> Result<Option<Vec<u8>>, StoreError>;
}

/// A lease of a tenant's concurrency permits ([`Shared::acquire_permits`]).
#[derive(Debug, Clone, Copy)]
pub struct PermitLease<'a> {
    /// The tenant.
    pub tenant: &'a str,
    /// The process leasing.
    pub holder: &'a str,
    /// How many the holder holds now.
    pub held: usize,
    /// How many more it wants.
    pub want: usize,
    /// The tenant's `max_concurrent`.
    pub limit: usize,
    /// When the holder's lease expires unless renewed.
    pub until: SystemTime,
}

/// A store several processes share (PostgreSQL): a tenant's concurrency
/// permits are leased in it, its `max_queued` is checked in it, and each
/// process hears of the others' enqueues and cancels. Without it, the
/// store belongs to one process, whose own gates are the limits.
pub trait Shared: Send + Sync {
    /// Leases up to `lease.want` more of the tenant's `lease.limit`
    /// permits to `lease.holder`, which holds `lease.held` now: counts the
    /// unexpired leases of the other holders, in one step no other holder
    /// interleaves with, and records the holder's lease as `held` + what
    /// it leased, until `lease.until`. Returns how many it leased.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails; nothing is leased then.
    fn acquire_permits(&self, lease: &PermitLease<'_>, now: SystemTime) -> Result<usize, StoreError>;

    /// Records that `holder` now holds `held` of `tenant`'s permits (it
    /// gave some back), its lease lasting until `until`.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails (the holder's next lease write
    /// records its count, or the lease expires).
    fn release_permits(&self, tenant: &str, holder: &str, held: usize, until: SystemTime) -> Result<(), StoreError>;

    /// Permits of `tenant` leased now, by every holder (unexpired leases).
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn permits_leased(&self, tenant: &str, now: SystemTime) -> Result<usize, StoreError>;

    /// Enqueues `jobs` (all or none) only when `cap.topics` hold at most
    /// `cap.max` live jobs (queued, gated or running) with them, counted in
    /// the same step as the insert, which no other capped enqueue of
    /// `cap.tenant` interleaves with, in any process sharing the store.
    /// Every job counts, even one whose key names an existing job (the
    /// safe side: a batch is never admitted past the limit).
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails; nothing is enqueued then.
    fn enqueue_capped(&self, jobs: Vec<NewJob>, cap: &QueueCap<'_>, now: SystemTime) -> Result<Capped, StoreError>;

    /// Registers the receiver of events from other processes sharing this
    /// store.
    fn subscribe(&self, events: std::sync::Weak<dyn StoreEvents>);
}
