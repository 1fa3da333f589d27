//! The embedding API: build a host with a store, a clock, an outcome sink
//! and topics (each a plugin or a native handler, with its limits, retry
//! policy and error mapper), then enqueue jobs and receive terminal
//! outcomes.

mod deploy;
mod jobs;
mod periodic;
mod pruner;
mod services;
mod snapshot;
mod stored;
mod topic;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

pub use deploy::DeployError;
pub use pruner::{PRUNE_BATCH, PRUNE_EVERY};
use services::Services;
pub use snapshot::{SNAPSHOT_COST_FACTOR, SNAPSHOT_EVERY};
pub use stored::FOLLOW_EVERY;
use stored::{Swappable, kept_in};
pub use topic::{MapperSpec, OperatorFile, PluginSource, Topic};
use topic::{Runner, load_mapper};

use crate::classify::RuleError;
use crate::clock::{Clock, SystemClock};
use crate::dispatch::{Dispatcher, Enqueue, EnqueueError, Snapshot};
use crate::engine::{Engine, EngineConfig, EngineError};
use crate::outcome::{NullSink, OutcomeSink};
use crate::permanent::PermanentFaults;
use crate::plugin::PluginError;
use crate::quota::{ConcurrencyGate, QueueCheck, Quota, SharedGate};
use crate::retry::RetryPolicySpec;
use crate::sandbox::Sandbox;
use crate::store::{Capped, Enqueued, JobId, JobStore, MemoryStore, QueueCap, Retention, StoreError};
use crate::versions::{KEPT_VERSIONS, VersionLog};
use crate::worker::{AttemptObserver, Handler, PoolHooks, WasmHandler, WorkerPool};

/// Why a host could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// The engine could not be built.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// A topic's plugin or mapper could not be loaded.
    #[error("topic `{topic}`: {error}")]
    Plugin {
        /// The topic.
        topic: String,
        /// Why (in the message, not a separate cause).
        error: PluginError,
    },
    /// A topic's rules are invalid.
    #[error("topic `{topic}`: {error}")]
    Rules {
        /// The topic.
        topic: String,
        /// Why (in the message, not a separate cause).
        error: RuleError,
    },
    /// Two topics have the same name.
    #[error("topic `{0}` is registered twice")]
    DuplicateTopic(String),
    /// The topic classifies with its own plugin (`MapperSpec::SamePlugin`),
    /// which does not export `classify`.
    #[error("topic `{0}`: its plugin does not export `classify`")]
    NoClassify(String),
    /// The host functions could not be linked (a bug in husk, not an input
    /// error).
    #[error("linking host functions: {0:#}")]
    Link(wasmtime::Error),
    /// A worker thread could not be started.
    #[error("starting workers: {0}")]
    Workers(std::io::Error),
    /// The store failed reading or recording the plugin versions topics
    /// start on.
    #[error("plugin versions: {0}")]
    Store(StoreError),
}

/// Builds a [`Host`]; see [`Host::builder`] for the defaults.
#[must_use]
pub struct HostBuilder {
    store: Arc<dyn JobStore>,
    clock: Arc<dyn Clock>,
    sink: Arc<dyn OutcomeSink>,
    engine: EngineConfig,
    default_retry: Option<RetryPolicySpec>,
    permanent_faults: Option<PermanentFaults>,
    topics: Vec<Topic>,
    quotas: HashMap<String, Quota>,
    observer: Option<Arc<dyn AttemptObserver>>,
    start_workers: bool,
    kept_versions: usize,
    retention: Option<Retention>,
    prune_every: Duration,
}

impl HostBuilder {
    /// Sets the job store.
    pub fn store(mut self, store: Arc<dyn JobStore>) -> Self {
        self.store = store;
        self
    }

    /// Sets the clock.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Sets the sink of terminal outcomes.
    pub fn sink(mut self, sink: Arc<dyn OutcomeSink>) -> Self {
        self.sink = sink;
        self
    }

    /// Sets the engine configuration.
    pub fn engine(mut self, engine: EngineConfig) -> Self {
        self.engine = engine;
        self
    }

    /// Sets the engine-wide default retry policy.
    pub fn default_retry(mut self, retry: RetryPolicySpec) -> Self {
        self.default_retry = Some(retry);
        self
    }

    /// Sets the engine-wide list of technical faults never retried (default
    /// [`PermanentFaults::default`]); a topic's own list replaces it.
    pub fn permanent_faults(mut self, faults: PermanentFaults) -> Self {
        self.permanent_faults = Some(faults);
        self
    }

    /// Adds a topic.
    pub fn topic(mut self, topic: Topic) -> Self {
        self.topics.push(topic);
        self
    }

    /// Sets a tenant's quota (its topics name it with [`Topic::with_tenant`]).
    pub fn quota(mut self, tenant: impl Into<String>, quota: Quota) -> Self {
        self.quotas.insert(tenant.into(), quota);
        self
    }

    /// Sets the observer told of every attempt (metrics).
    pub fn observer(mut self, observer: Arc<dyn AttemptObserver>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// How many plugin versions the store keeps per topic (default
    /// [`KEPT_VERSIONS`]; at least 1): the most recently current ones, which
    /// a rollback can go back to after a restart.
    pub fn kept_versions(mut self, keep: usize) -> Self {
        self.kept_versions = keep.max(1);
        self
    }

    /// How long ended jobs are kept (default [`Retention::default`]):
    /// while the workers run, a cleaner prunes the store every
    /// [`PRUNE_EVERY`]. `None`: nothing is pruned (the store grows).
    pub fn retention(mut self, retention: Option<Retention>) -> Self {
        self.retention = retention;
        self
    }

    /// How often the cleaner prunes (default [`PRUNE_EVERY`]).
    pub fn prune_every(mut self, every: Duration) -> Self {
        self.prune_every = every;
        self
    }

    /// Whether `build` starts the worker pools (default `true`); without
    /// them, jobs wait until [`Host::start_workers`].
    pub fn start_workers(mut self, start: bool) -> Self {
        self.start_workers = start;
        self
    }

    /// Loads and validates every plugin, registers the topics and starts
    /// the worker pools.
    ///
    /// # Errors
    ///
    /// [`HostError`] naming the topic whose plugin, mapper or rules are bad.
    pub fn build(mut self) -> Result<Host, HostError> {
        let permanent = self.permanent_faults.take().unwrap_or_default();
        for topic in &mut self.topics {
            topic.permanent.get_or_insert_with(|| permanent.clone());
        }
        let fuel = self.topics.iter().any(|t| t.limits.fuel.is_some());
        let engine = Engine::new(EngineConfig { fuel: self.engine.fuel || fuel, ..self.engine })?;
        let sandbox = Sandbox::new(engine).map_err(HostError::Link)?;
        let dispatcher = Dispatcher::new(self.store, self.clock, self.sink, self.default_retry);
        // On a store several processes share, the permits are leased from
        // it (one holder per process), for as long as the longest lock of
        // the tenant's topics: a killed process's permits come back then.
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        let holder = format!("{}-{}-{:08x}", host.trim(), std::process::id(), fastrand::u32(..));
        let gate = |tenant: &String, limit: usize| {
            let store = dispatcher.store();
            if !store.is_shared() {
                return ConcurrencyGate::new(limit);
            }
            let tenants_topics = self.topics.iter().filter(|t| t.tenant.as_ref() == Some(tenant));
            let lease = tenants_topics.map(|t| t.pool_config().lock_duration).max().unwrap_or(Duration::from_secs(60));
            ConcurrencyGate::shared(
                limit,
                SharedGate {
                    store: store.clone(),
                    clock: dispatcher.clock().clone(),
                    tenant: tenant.clone(),
                    holder: holder.clone(),
                    lease,
                    leased: Mutex::new(0),
                },
            )
        };
        let gates: HashMap<String, Arc<ConcurrencyGate>> = self
            .quotas
            .iter()
            .filter_map(|(tenant, quota)| Some((tenant.clone(), Arc::new(gate(tenant, quota.max_concurrent?)))))
            .collect();
        let mut runtimes: Vec<TopicRuntime> = Vec::new();
        let pointers = match dispatcher.store().supports().versions {
            Some(versions) => versions.current_versions().map_err(HostError::Store)?,
            None => Vec::new(),
        };
        for topic in &self.topics {
            if runtimes.iter().any(|r| r.topic.name == topic.name) {
                return Err(HostError::DuplicateTopic(topic.name.clone()));
            }
            let (handler, swappable) = match &topic.runner {
                Runner::Native(handler) => (handler.clone(), None),
                Runner::Wasm(source) => {
                    let pointer = pointers.iter().find(|p| p.topic == topic.name);
                    let now = dispatcher.clock().now();
                    let store = dispatcher.store().as_ref();
                    let (plugin, stamp) =
                        stored::start_version(&sandbox, store, topic, source, pointer, self.kept_versions, now)
                            .map_err(|error| match error {
                                stored::StartError::Plugin(error) => {
                                    HostError::Plugin { topic: topic.name.clone(), error }
                                }
                                stored::StartError::Store(error) => HostError::Store(error),
                            })?;
                    let wasm = Arc::new(WasmHandler::granted(
                        sandbox.clone(),
                        plugin.clone(),
                        topic.limits.clone(),
                        topic.grants.clone(),
                    ));
                    let log = Arc::new(Mutex::new(VersionLog::starting(plugin, stamp)));
                    (wasm.clone() as Arc<dyn Handler>, Some(Swappable { topic: topic.clone(), wasm, log }))
                }
            };
            let own_plugin = swappable.as_ref().map(|s| s.log.lock().current().clone());
            let mapper = load_mapper(&sandbox, topic, own_plugin.as_ref())?;
            dispatcher.set_topic(&topic.name, topic.policy(mapper));
            let gate = topic.tenant.as_ref().and_then(|t| gates.get(t)).cloned();
            let hooks = PoolHooks { gate, observer: self.observer.clone() };
            runtimes.push(TopicRuntime { topic: topic.clone(), handler, swappable, hooks });
        }
        let queue_checks = self
            .quotas
            .iter()
            .filter(|(_, quota)| quota.max_queued.is_some())
            .map(|(tenant, _)| (tenant.clone(), Mutex::new(QueueCheck::default())))
            .collect();
        let host = Host {
            dispatcher,
            sandbox,
            runtimes,
            quotas: self.quotas,
            queue_checks,
            kept_versions: self.kept_versions,
            retention: self.retention,
            prune_every: self.prune_every,
            pools: Mutex::new(Vec::new()),
            services: Services::default(),
        };
        if self.start_workers {
            host.start_workers().map_err(HostError::Workers)?;
        }
        Ok(host)
    }
}

/// A registered topic: what runs its jobs, its versions, its pool's hooks.
struct TopicRuntime {
    topic: Topic,
    handler: Arc<dyn Handler>,
    /// The same handler and its versions when it runs Wasm (it can be
    /// swapped); the versions' mutex also orders swaps.
    swappable: Option<Swappable>,
    hooks: PoolHooks,
}

/// A running husk: the dispatcher and the worker pools of its topics.
pub struct Host {
    dispatcher: Arc<Dispatcher>,
    sandbox: Sandbox,
    runtimes: Vec<TopicRuntime>,
    quotas: HashMap<String, Quota>,
    /// The `max_queued` check of each tenant that has one; its mutex
    /// serializes the tenant's enqueues while it is checked, so two cannot
    /// both take the last slot (in this process).
    queue_checks: HashMap<String, Mutex<QueueCheck>>,
    /// Plugin versions kept in the store per topic.
    kept_versions: usize,
    /// How long ended jobs are kept; `None`: forever.
    retention: Option<Retention>,
    /// How often the cleaner prunes.
    prune_every: Duration,
    pools: Mutex<Vec<WorkerPool>>,
    /// The snapshot publisher, the cleaner and the version follower.
    services: Services,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host").field("dispatcher", &self.dispatcher).finish_non_exhaustive()
    }
}

impl Host {
    /// A builder with these defaults: an in-memory store
    /// ([`MemoryStore`]), the system clock, a sink that drops outcomes
    /// ([`NullSink`]), [`EngineConfig::default`] (fuel turned on when any
    /// topic sets a fuel budget), the built-in retry default (3 attempts,
    /// exponential with jitter), no topics, workers started by `build`.
    pub fn builder() -> HostBuilder {
        HostBuilder {
            store: Arc::new(MemoryStore::new()),
            clock: Arc::new(SystemClock),
            sink: Arc::new(NullSink),
            engine: EngineConfig::default(),
            default_retry: None,
            permanent_faults: None,
            topics: Vec::new(),
            quotas: HashMap::new(),
            observer: None,
            start_workers: true,
            kept_versions: KEPT_VERSIONS,
            retention: Some(Retention::default()),
            prune_every: PRUNE_EVERY,
        }
    }

    /// The sandbox jobs run in.
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// Enqueues one job, within its tenant's `max_queued`: [`Host::submit`]
    /// of [`Enqueue::one`].
    ///
    /// # Errors
    ///
    /// [`EnqueueError`] for an unknown topic, a tenant at its `max_queued`,
    /// or a store failure; nothing is enqueued then.
    pub fn enqueue(&self, topic: &str, input: impl Into<Vec<u8>>) -> Result<JobId, EnqueueError> {
        Ok(self.submit(Enqueue::one(topic, input))?[0].id)
    }

    /// Whether [`Host::submit_async`] of a request for `topic` waits
    /// without a thread of its own: the store enqueues in the background
    /// and the topic's tenant has no `max_queued` to check (that check is a
    /// blocking call).
    pub fn enqueues_without_blocking(&self, topic: &str) -> bool {
        self.queue_cap(topic).is_none() && self.dispatcher.enqueues_in_background()
    }

    /// The `max_queued` an enqueue of `topic` is checked against: its
    /// tenant, the limit, and the tenant's check. `None`: no limit applies.
    fn queue_cap(&self, topic: &str) -> Option<(&str, u64, &Mutex<QueueCheck>)> {
        let tenant = self.runtimes.iter().find(|r| r.topic.name == topic)?.topic.tenant.as_deref()?;
        Some((tenant, self.quota(tenant).max_queued?, self.queue_checks.get(tenant)?))
    }

    /// Enqueues `request` (one job or many, keyed or not; see [`Enqueue`]):
    /// one [`Enqueued`] per job, in order. The jobs count against their
    /// tenant's `max_queued` (live jobs: queued, gated or running) — every
    /// job of the request, even one whose key is taken — estimated from the
    /// last published snapshot plus this process's enqueues since, counted
    /// exactly within a tenth of the limit (see [`QueueCheck`]); on a store
    /// several processes share, counted exactly in the store at every
    /// enqueue, in step with the other processes (see
    /// [`Shared::enqueue_capped`](crate::store::Shared::enqueue_capped)).
    ///
    /// # Errors
    ///
    /// As [`Host::enqueue`]: a request that would take the tenant past its
    /// `max_queued` is refused whole.
    pub fn submit(&self, request: Enqueue) -> Result<Vec<Enqueued>, EnqueueError> {
        let Some((tenant, max, check)) = self.queue_cap(&request.topic) else {
            return self.dispatcher.submit(request);
        };
        let adding = request.jobs.len() as u64;
        let mut check = check.lock();
        let topics: Vec<String> =
            self.topics().filter(|t| t.tenant() == Some(tenant)).map(|t| t.name().to_owned()).collect();
        if self.dispatcher.store().is_shared() {
            // Other processes enqueue too: counted in the store, with them.
            let cap = QueueCap { tenant, topics: &topics, max };
            return match self.dispatcher.submit_capped(request, &cap)? {
                Capped::Enqueued(enqueued) => Ok(enqueued),
                Capped::Full { live } => Err(EnqueueError::QuotaExceeded { tenant: tenant.to_owned(), live, max }),
            };
        }
        let snapshot = self.dispatcher.snapshot();
        let live = check.live(snapshot.totals.enqueued, &snapshot.depths, &topics, max, adding, || {
            self.dispatcher.store().depths()
        })?;
        if live + adding > max {
            return Err(EnqueueError::QuotaExceeded { tenant: tenant.to_owned(), live, max });
        }
        let enqueued = self.dispatcher.submit(request)?;
        let created = enqueued.iter().filter(|e| e.created).count() as u64;
        if created > 0 {
            check.added(self.dispatcher.enqueued(), created);
        }
        Ok(enqueued)
    }

    /// [`Host::submit`] for a caller on a tokio runtime: where
    /// [`Host::enqueues_without_blocking`], no thread waits for the store's
    /// commit; otherwise the call runs on tokio's blocking pool.
    ///
    /// # Errors
    ///
    /// As [`Host::submit`].
    pub async fn submit_async(self: &Arc<Self>, request: Enqueue) -> Result<Vec<Enqueued>, EnqueueError> {
        if self.enqueues_without_blocking(&request.topic) {
            return self.dispatcher.submit_async(request).await;
        }
        let host = self.clone();
        crate::dispatch::on_blocking_thread(move || host.submit(request)).await
    }

    /// Pauses (`paused: true`) or resumes a topic, for every process
    /// sharing the store: a paused topic's jobs are not fetched, enqueues
    /// still land (see [`Pauses::set_paused`](crate::store::Pauses::set_paused)). Returns whether its state
    /// changed.
    ///
    /// # Errors
    ///
    /// [`EnqueueError::UnknownTopic`] for a topic this host does not run;
    /// [`EnqueueError::Store`] when the store fails or has no pauses.
    pub fn set_paused(&self, topic: &str, paused: bool) -> Result<bool, EnqueueError> {
        if !self.topics().any(|t| t.name() == topic) {
            return Err(EnqueueError::UnknownTopic(topic.to_owned()));
        }
        Ok(self.dispatcher.set_paused(topic, paused)?)
    }

    /// The paused topics, read from the store.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    pub fn paused(&self) -> Result<Vec<String>, StoreError> {
        match self.dispatcher.store().supports().pauses {
            Some(pauses) => pauses.paused(),
            None => Ok(Vec::new()),
        }
    }

    /// The last published snapshot (refreshed every second while workers
    /// run, or less often when counting the store's live jobs, a scan of
    /// them, takes long: see [`SNAPSHOT_COST_FACTOR`]).
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.dispatcher.snapshot()
    }

    /// The registered topics.
    pub fn topics(&self) -> impl Iterator<Item = &Topic> {
        self.runtimes.iter().map(|r| &r.topic)
    }

    /// A tenant's quota (unlimited when none was set).
    pub fn quota(&self, tenant: &str) -> Quota {
        self.quotas.get(tenant).copied().unwrap_or_default()
    }

    /// Running jobs of a tenant counted by its concurrency gate, and the
    /// limit; `None` when the tenant has no `max_concurrent`.
    pub fn concurrency(&self, tenant: &str) -> Option<(usize, usize)> {
        self.runtimes
            .iter()
            .filter(|r| r.topic.tenant.as_deref() == Some(tenant))
            .find_map(|r| r.hooks.gate.as_ref())
            .map(|g| (g.in_use(), g.limit()))
    }

    /// Starts the worker pools (and the snapshot publisher), if not started.
    ///
    /// # Errors
    ///
    /// When a thread cannot be spawned.
    pub fn start_workers(&self) -> std::io::Result<()> {
        let mut pools = self.pools.lock();
        if !pools.is_empty() || self.services.started() {
            return Ok(());
        }
        for runtime in &self.runtimes {
            let (topic, handler) = (&runtime.topic, runtime.handler.clone());
            let config = topic.pool_config();
            pools.push(WorkerPool::start_with(
                self.dispatcher.clone(),
                &topic.name,
                handler,
                &config,
                runtime.hooks.clone(),
            )?);
        }
        self.start_services()
    }

    /// Starts the background services, in one place (see [`services`]).
    fn start_services(&self) -> std::io::Result<()> {
        let store = self.dispatcher.store().as_ref();
        self.services.start(snapshot::Publisher { dispatcher: self.dispatcher.clone() })?;
        // A store without pruning keeps every ended job: nothing to clean.
        if let Some(retention) = self.retention.filter(|_| store.supports().pruning.is_some()) {
            self.services.start(pruner::Pruner {
                dispatcher: self.dispatcher.clone(),
                retention,
                every: self.prune_every,
            })?;
        }
        let follower = stored::Follower {
            sandbox: self.sandbox.clone(),
            dispatcher: self.dispatcher.clone(),
            topics: self
                .runtimes
                .iter()
                .filter(|r| kept_in(store, &r.topic).is_some())
                .filter_map(|r| r.swappable.clone())
                .collect(),
        };
        if !follower.topics.is_empty() {
            self.services.start(follower)?;
        }
        let scheduled: Vec<periodic::Scheduled> = self
            .runtimes
            .iter()
            .filter_map(|r| {
                let schedule = r.topic.schedule.clone()?;
                Some(periodic::Scheduled { topic: r.topic.name.clone(), schedule, enqueued_through: None })
            })
            .collect();
        if !scheduled.is_empty() {
            self.services.start(periodic::Scheduler { dispatcher: self.dispatcher.clone(), topics: scheduled })?;
        }
        Ok(())
    }

    /// Stops fetching, lets running jobs finish, and joins every thread.
    pub fn shutdown(&self) {
        self.shutdown_within(None);
    }

    /// A graceful shutdown: stops fetching, lets running jobs finish for up
    /// to `grace` (`None`: as long as they take), then interrupts the rest.
    /// Jobs interrupted, and jobs fetched but not started, are released to
    /// the store on the attempt they were on, which is not spent. Returns
    /// whether every job finished within the grace period.
    pub fn shutdown_within(&self, grace: Option<Duration>) -> bool {
        let pools = std::mem::take(&mut *self.pools.lock());
        self.dispatcher.shut_down();
        pools.iter().for_each(WorkerPool::begin_stop);
        let mut in_time = true;
        if let Some(grace) = grace {
            let deadline = std::time::Instant::now() + grace;
            while !pools.iter().all(WorkerPool::is_finished) {
                if std::time::Instant::now() >= deadline {
                    in_time = false;
                    tracing::warn!(?grace, "grace period over: interrupting running jobs and releasing them");
                    self.dispatcher.interrupt_running();
                    break;
                }
                // Real time on purpose: a shutdown waits for real threads.
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        for pool in pools {
            pool.stop();
        }
        self.services.stop();
        in_time
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.shutdown();
    }
}
