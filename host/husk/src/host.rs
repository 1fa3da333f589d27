//! The embedding API: build a host with a store, a clock, an outcome sink
//! and topics (each a plugin or a native handler, with its limits, retry
//! policy and error mapper), then enqueue jobs and receive terminal
//! outcomes.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::classify::{ErrorMapper, Rule, RuleError, Rules};
use crate::clock::{Clock, SystemClock};
use crate::dispatch::{Dispatcher, EnqueueError, Snapshot, TopicPolicy};
use crate::engine::{Engine, EngineConfig, EngineError, content_digest};
use crate::outcome::{NullSink, OutcomeSink};
use crate::plugin::{Plugin, PluginError, World};
use crate::quota::{ConcurrencyGate, Quota};
use crate::retry::RetryPolicySpec;
use crate::sandbox::{Limits, Sandbox};
use crate::store::{CancelResult, JobId, JobStore, MemoryStore, StoreError};
use crate::versions::{Origin, VersionInfo, VersionLog};
use crate::worker::{AttemptObserver, Handler, PoolConfig, PoolHooks, WasmHandler, WorkerPool};

/// Where a component comes from.
#[derive(Debug, Clone)]
pub enum PluginSource {
    /// A component file (`.wasm`). Precompiled machine code is refused.
    Path(PathBuf),
    /// A component's bytes (say, from an API caller), with a name for
    /// errors. Precompiled machine code is refused.
    Bytes {
        /// The component.
        bytes: Vec<u8>,
        /// Its name in errors.
        name: String,
    },
    /// The operator's own file: a component, or machine code precompiled by
    /// `husk compile` (`.cwasm`).
    Operator(OperatorFile),
}

/// A file of the operator's that husk may load as precompiled machine code
/// (a `.cwasm` from `husk compile`). Made only by the `unsafe`
/// [`OperatorFile::new`], whose caller vouches for the file.
#[derive(Debug, Clone)]
pub struct OperatorFile(PathBuf);

impl OperatorFile {
    /// The file at `path`, as the operator's own.
    ///
    /// # Safety
    ///
    /// As [`Sandbox::load_trusted_bytes`]: precompiled code in the file runs
    /// in this process with all of husk's rights, so it must be the
    /// unmodified output of `husk compile`, in a file no tenant, API caller
    /// or other user can write (for husk serve: a config file's topic with
    /// `allow_precompiled = true`).
    #[allow(unsafe_code)]
    pub unsafe fn new(path: PathBuf) -> Self {
        Self(path)
    }

    /// The file.
    pub fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl PluginSource {
    /// The component's bytes and its name in errors.
    fn bytes(&self) -> Result<(std::borrow::Cow<'_, [u8]>, String), PluginError> {
        let path = match self {
            PluginSource::Path(path) | PluginSource::Operator(OperatorFile(path)) => path,
            PluginSource::Bytes { bytes, name } => return Ok((bytes.as_slice().into(), name.clone())),
        };
        let source_name = path.display().to_string();
        match std::fs::read(path) {
            Ok(bytes) => Ok((bytes.into(), source_name)),
            Err(error) => Err(PluginError::Read { source_name, error }),
        }
    }

    fn load(&self, sandbox: &Sandbox, world: World) -> Result<Plugin, PluginError> {
        let (bytes, name) = self.bytes()?;
        self.load_bytes(sandbox, &bytes, world, &name)
    }

    /// Loads `bytes` read from this source.
    #[allow(unsafe_code)]
    fn load_bytes(&self, sandbox: &Sandbox, bytes: &[u8], world: World, name: &str) -> Result<Plugin, PluginError> {
        match self {
            // SAFETY: the bytes are the operator's file's, which
            // `OperatorFile::new`'s caller vouched for.
            PluginSource::Operator(_) => unsafe { sandbox.load_trusted_bytes(bytes, world, name) },
            PluginSource::Path(_) | PluginSource::Bytes { .. } => sandbox.load_bytes(bytes, world, name),
        }
    }
}

/// A topic's error mapper.
#[derive(Debug, Clone)]
pub enum MapperSpec {
    /// A component of the `error-mapper` world.
    Plugin(PluginSource),
    /// The topic's own plugin, which also exports `classify`.
    SamePlugin,
    /// Declarative rules.
    Rules(Vec<Rule>),
}

/// What runs a topic's jobs.
#[derive(Clone)]
enum Runner {
    Wasm(PluginSource),
    Native(Arc<dyn Handler>),
}

/// A topic to register: `Topic::wasm(name, source)` or
/// `Topic::native(name, handler)`, then the `with_*` settings. Defaults:
/// [`Limits::default`], [`PoolConfig::default`] with the lock duration set to
/// the deadline times the fetch batch plus 30 s, no topic retry policy (the
/// engine-wide default applies), no error mapper (every fault technical).
#[derive(Clone)]
pub struct Topic {
    name: String,
    tenant: Option<String>,
    runner: Runner,
    limits: Limits,
    pool: PoolConfig,
    lock_duration: Option<Duration>,
    retry: Option<RetryPolicySpec>,
    mapper: Option<MapperSpec>,
    mapper_deadline: Option<Duration>,
}

impl std::fmt::Debug for Topic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Topic").field("name", &self.name).field("limits", &self.limits).finish_non_exhaustive()
    }
}

impl Topic {
    /// A topic whose jobs run on a Wasm component.
    pub fn wasm(name: impl Into<String>, source: PluginSource) -> Self {
        Self::with_runner(name.into(), Runner::Wasm(source))
    }

    /// A topic whose jobs run on a native handler (no sandbox).
    pub fn native(name: impl Into<String>, handler: Arc<dyn Handler>) -> Self {
        Self::with_runner(name.into(), Runner::Native(handler))
    }

    fn with_runner(name: String, runner: Runner) -> Self {
        Self {
            name,
            tenant: None,
            runner,
            limits: Limits::default(),
            pool: PoolConfig::default(),
            lock_duration: None,
            retry: None,
            mapper: None,
            mapper_deadline: None,
        }
    }

    /// Sets the deadline of one run of the topic's Wasm error mapper
    /// (default 100 ms, [`Limits::error_mapper`]): a mapper past it counts
    /// as classifying the fault `technical`. An interpreted mapper (Python,
    /// JavaScript) on a busy machine may want more.
    #[must_use]
    pub fn with_mapper_deadline(mut self, deadline: Duration) -> Self {
        self.mapper_deadline = Some(deadline);
        self
    }

    /// Sets the tenant owning the topic (whose quota its jobs count
    /// against).
    #[must_use]
    pub fn with_tenant(mut self, tenant: impl Into<String>) -> Self {
        self.tenant = Some(tenant.into());
        self
    }

    /// The topic's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The tenant owning the topic, if any.
    pub fn tenant(&self) -> Option<&str> {
        self.tenant.as_deref()
    }

    /// Sets the limits of each job.
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets the number of worker threads.
    #[must_use]
    pub fn with_workers(mut self, workers: usize) -> Self {
        self.pool.workers = workers;
        self
    }

    /// Sets the jobs locked per fetch.
    #[must_use]
    pub fn with_fetch_batch(mut self, batch: usize) -> Self {
        self.pool.fetch_batch = batch.max(1);
        self
    }

    /// Sets how long a fetched job stays locked.
    #[must_use]
    pub fn with_lock_duration(mut self, lock_duration: Duration) -> Self {
        self.lock_duration = Some(lock_duration);
        self
    }

    /// Sets the topic's retry policy.
    #[must_use]
    pub fn with_retry(mut self, retry: RetryPolicySpec) -> Self {
        self.retry = Some(retry);
        self
    }

    /// Sets the topic's error mapper.
    #[must_use]
    pub fn with_mapper(mut self, mapper: MapperSpec) -> Self {
        self.mapper = Some(mapper);
        self
    }

    fn pool_config(&self) -> PoolConfig {
        let batch = self.pool.fetch_batch.max(1) as u32;
        let lock_duration =
            self.lock_duration.unwrap_or_else(|| self.limits.deadline.saturating_mul(batch) + Duration::from_secs(30));
        PoolConfig { lock_duration, ..self.pool.clone() }
    }
}

/// Why a host could not be built.
#[derive(Debug, thiserror::Error)]
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
    /// Anything else wrong with the configuration.
    #[error("{0}")]
    Config(String),
}

/// Builds a [`Host`]; see [`Host::builder`] for the defaults.
#[must_use]
pub struct HostBuilder {
    store: Arc<dyn JobStore>,
    clock: Arc<dyn Clock>,
    sink: Arc<dyn OutcomeSink>,
    engine: EngineConfig,
    default_retry: Option<RetryPolicySpec>,
    topics: Vec<Topic>,
    quotas: HashMap<String, Quota>,
    observer: Option<Arc<dyn AttemptObserver>>,
    start_workers: bool,
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
    pub fn build(self) -> Result<Host, HostError> {
        let fuel = self.topics.iter().any(|t| t.limits.fuel.is_some());
        let engine = Engine::new(EngineConfig { fuel: self.engine.fuel || fuel, ..self.engine })?;
        let sandbox = Sandbox::new(engine).map_err(|e| HostError::Config(format!("linking host functions: {e:#}")))?;
        let dispatcher = Dispatcher::new(self.store, self.clock, self.sink, self.default_retry);
        let gates: HashMap<String, Arc<ConcurrencyGate>> = self
            .quotas
            .iter()
            .filter_map(|(tenant, quota)| Some((tenant.clone(), Arc::new(ConcurrencyGate::new(quota.max_concurrent?)))))
            .collect();
        let mut runtimes: Vec<TopicRuntime> = Vec::new();
        for topic in &self.topics {
            if runtimes.iter().any(|r| r.topic.name == topic.name) {
                return Err(HostError::Config(format!("topic `{}` is registered twice", topic.name)));
            }
            let (handler, wasm, own_plugin) = match &topic.runner {
                Runner::Native(handler) => (handler.clone(), None, None),
                Runner::Wasm(source) => {
                    let plugin = source
                        .load(&sandbox, World::Operation)
                        .map_err(|error| HostError::Plugin { topic: topic.name.clone(), error })?;
                    let handler = Arc::new(WasmHandler::new(sandbox.clone(), plugin.clone(), topic.limits.clone()));
                    (handler.clone() as Arc<dyn Handler>, Some(handler), Some(plugin))
                }
            };
            let mapper = load_mapper(&sandbox, topic, own_plugin.as_ref())?;
            dispatcher.set_topic(&topic.name, TopicPolicy { retry: topic.retry, mapper });
            let gate = topic.tenant.as_ref().and_then(|t| gates.get(t)).cloned();
            let hooks = PoolHooks { gate, observer: self.observer.clone() };
            let versions = own_plugin.map(|p| Mutex::new(VersionLog::new(p, dispatcher.clock().now())));
            runtimes.push(TopicRuntime { topic: topic.clone(), handler, wasm, versions, hooks });
        }
        let host = Host {
            dispatcher,
            sandbox,
            runtimes,
            quotas: self.quotas,
            pools: Mutex::new(Vec::new()),
            publisher: Mutex::new(None),
            stopping: Arc::new(AtomicBool::new(false)),
        };
        if self.start_workers {
            host.start_workers().map_err(|e| HostError::Config(format!("starting workers: {e}")))?;
        }
        Ok(host)
    }
}

/// A registered topic: what runs its jobs, its versions, its pool's hooks.
struct TopicRuntime {
    topic: Topic,
    handler: Arc<dyn Handler>,
    /// The same handler when it runs Wasm (it can be swapped).
    wasm: Option<Arc<WasmHandler>>,
    /// The versions deployed; the mutex also orders swaps.
    versions: Option<Mutex<VersionLog>>,
    hooks: PoolHooks,
}

/// Why a deploy or a rollback was refused; the current version stays.
#[derive(Debug, thiserror::Error)]
pub enum DeployError {
    /// No such topic.
    #[error("unknown topic `{0}`")]
    UnknownTopic(String),
    /// The topic runs a native handler.
    #[error("topic `{0}` runs a native handler, not a plugin")]
    NotWasm(String),
    /// The component failed to load or validate.
    #[error("topic `{topic}`: {error}")]
    Invalid {
        /// The topic.
        topic: String,
        /// Why.
        error: PluginError,
    },
    /// The topic classifies with its own plugin, and the new one does not
    /// export `classify`.
    #[error("topic `{0}` classifies faults with its plugin's `classify`, which the new version does not export")]
    MissingClassify(String),
    /// No version to roll back to.
    #[error("topic `{topic}`: {reason}")]
    NoRollback {
        /// The topic.
        topic: String,
        /// Why.
        reason: String,
    },
}

/// `plugin` as `topic`'s error mapper in `sandbox`, with
/// [`Limits::error_mapper`] (the topic's mapper deadline, if it set one;
/// without fuel when the engine does not meter it).
fn wasm_mapper(sandbox: &Sandbox, topic: &Topic, plugin: Plugin) -> ErrorMapper {
    let mut limits = Limits::error_mapper();
    if !sandbox.engine().config().fuel {
        limits.fuel = None;
    }
    if let Some(deadline) = topic.mapper_deadline {
        limits.deadline = deadline;
    }
    ErrorMapper::Wasm { sandbox: sandbox.clone(), plugin, limits }
}

/// Loads a topic's error mapper; `own` is the topic's plugin, if it has one.
fn load_mapper(sandbox: &Sandbox, topic: &Topic, own: Option<&Plugin>) -> Result<Option<ErrorMapper>, HostError> {
    let plugin_error = |error| HostError::Plugin { topic: topic.name.clone(), error };
    Ok(match &topic.mapper {
        None => None,
        Some(MapperSpec::Rules(rules)) => Some(ErrorMapper::Rules(
            Rules::new(rules.clone()).map_err(|error| HostError::Rules { topic: topic.name.clone(), error })?,
        )),
        Some(MapperSpec::Plugin(source)) => {
            Some(wasm_mapper(sandbox, topic, source.load(sandbox, World::ErrorMapper).map_err(plugin_error)?))
        }
        Some(MapperSpec::SamePlugin) => {
            let plugin = own.filter(|p| p.is_error_mapper()).cloned().ok_or_else(|| {
                HostError::Config(format!("topic `{}`: its plugin does not export `classify`", topic.name))
            })?;
            Some(wasm_mapper(sandbox, topic, plugin))
        }
    })
}

/// A running husk: the dispatcher and the worker pools of its topics.
pub struct Host {
    dispatcher: Arc<Dispatcher>,
    sandbox: Sandbox,
    runtimes: Vec<TopicRuntime>,
    quotas: HashMap<String, Quota>,
    pools: Mutex<Vec<WorkerPool>>,
    publisher: Mutex<Option<JoinHandle<()>>>,
    stopping: Arc<AtomicBool>,
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
            topics: Vec::new(),
            quotas: HashMap::new(),
            observer: None,
            start_workers: true,
        }
    }

    /// The dispatcher.
    pub fn dispatcher(&self) -> &Arc<Dispatcher> {
        &self.dispatcher
    }

    /// The sandbox jobs run in.
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// Enqueues a job.
    ///
    /// # Errors
    ///
    /// [`EnqueueError`] for an unknown topic or a store failure.
    pub fn enqueue(&self, topic: &str, input: impl Into<Vec<u8>>) -> Result<JobId, EnqueueError> {
        self.dispatcher.enqueue(topic, input.into())
    }

    /// Cancels a job.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    pub fn cancel(&self, id: JobId) -> Result<CancelResult, StoreError> {
        self.dispatcher.cancel(id)
    }

    /// The last published snapshot (refreshed every second while workers run: it counts
    /// the store's live jobs, which costs a scan of them).
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

    fn runtime(&self, topic: &str) -> Result<&TopicRuntime, DeployError> {
        self.runtimes.iter().find(|r| r.topic.name == topic).ok_or_else(|| DeployError::UnknownTopic(topic.to_owned()))
    }

    fn versions_of(&self, topic: &str) -> Result<(&TopicRuntime, &Mutex<VersionLog>), DeployError> {
        let runtime = self.runtime(topic)?;
        let versions = runtime.versions.as_ref().ok_or_else(|| DeployError::NotWasm(topic.to_owned()))?;
        Ok((runtime, versions))
    }

    /// Deploys a new version of `topic`'s plugin: compiles and validates it
    /// on the calling thread (never a worker's), then swaps it in
    /// atomically. Jobs already fetched finish on the version they were
    /// fetched with; the next fetch runs the new one. A version that fails
    /// to load is refused and the current one stays.
    ///
    /// # Errors
    ///
    /// [`DeployError`]; nothing changed then.
    pub fn deploy(&self, topic: &str, source: &PluginSource, origin: Origin) -> Result<VersionInfo, DeployError> {
        let (runtime, versions) = self.versions_of(topic)?;
        let invalid = |error| DeployError::Invalid { topic: topic.to_owned(), error };
        let (bytes, name) = source.bytes().map_err(invalid)?;
        // A version already loaded is reused as it is: deploying it again
        // neither compiles it nor drops the loaded copy (dropping a module
        // makes wasmtime reclaim its warm pool slots, which running jobs
        // would compete with).
        let loaded = versions.lock().unwrap_or_else(|p| p.into_inner()).find(&content_digest(&bytes));
        let plugin = match loaded {
            Some(plugin) => plugin,
            None => source.load_bytes(&self.sandbox, &bytes, World::Operation, &name).map_err(invalid)?,
        };
        if matches!(runtime.topic.mapper, Some(MapperSpec::SamePlugin)) && !plugin.is_error_mapper() {
            return Err(DeployError::MissingClassify(topic.to_owned()));
        }
        Ok(self.make_current(runtime, plugin, origin))
    }

    /// Makes the version deployed before the current one current again, or
    /// the loaded version `to` (a digest or a prefix of one).
    ///
    /// # Errors
    ///
    /// [`DeployError::NoRollback`] when there is no such version.
    pub fn rollback(&self, topic: &str, to: Option<&str>) -> Result<VersionInfo, DeployError> {
        let (runtime, versions) = self.versions_of(topic)?;
        let target = versions.lock().unwrap_or_else(|p| p.into_inner()).rollback_target(to).ok_or_else(|| {
            let reason = match to {
                Some(v) => format!("no loaded version `{v}` other than the current one"),
                None => "no earlier version to roll back to".to_owned(),
            };
            DeployError::NoRollback { topic: topic.to_owned(), reason }
        })?;
        Ok(self.make_current(runtime, target, Origin::Rollback))
    }

    /// The version of `topic`'s plugin new fetches run on; `None` for an
    /// unknown or native topic.
    pub fn current_version(&self, topic: &str) -> Option<VersionInfo> {
        let (_, versions) = self.versions_of(topic).ok()?;
        Some(versions.lock().unwrap_or_else(|p| p.into_inner()).current_info())
    }

    /// The loaded versions of `topic`'s plugin, newest first.
    ///
    /// # Errors
    ///
    /// [`DeployError`] for an unknown or native topic.
    pub fn versions(&self, topic: &str) -> Result<Vec<VersionInfo>, DeployError> {
        let (_, versions) = self.versions_of(topic)?;
        Ok(versions.lock().unwrap_or_else(|p| p.into_inner()).list())
    }

    fn make_current(&self, runtime: &TopicRuntime, plugin: Plugin, origin: Origin) -> VersionInfo {
        let (Some(versions), Some(wasm)) = (&runtime.versions, &runtime.wasm) else {
            unreachable!("versions_of checked the topic runs Wasm");
        };
        let mut versions = versions.lock().unwrap_or_else(|p| p.into_inner());
        if matches!(runtime.topic.mapper, Some(MapperSpec::SamePlugin)) {
            let mapper = wasm_mapper(&self.sandbox, &runtime.topic, plugin.clone());
            self.dispatcher
                .set_topic(&runtime.topic.name, TopicPolicy { retry: runtime.topic.retry, mapper: Some(mapper) });
        }
        let previous = wasm.swap(plugin.clone());
        versions.push(plugin, origin, self.dispatcher.clock().now());
        tracing::info!(
            topic = %runtime.topic.name,
            version = %versions.current().digest(),
            previous = %previous.digest(),
            ?origin,
            "plugin version swapped"
        );
        versions.current_info()
    }

    /// Starts the worker pools (and the snapshot publisher), if not started.
    ///
    /// # Errors
    ///
    /// When a thread cannot be spawned.
    pub fn start_workers(&self) -> std::io::Result<()> {
        let mut pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        if !pools.is_empty() {
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
        let (dispatcher, stopping) = (self.dispatcher.clone(), self.stopping.clone());
        let publisher = std::thread::Builder::new().name("husk-snapshot".into()).spawn(move || {
            while !stopping.load(Ordering::Acquire) {
                if let Err(error) = dispatcher.publish_snapshot() {
                    tracing::warn!(%error, "publishing the status snapshot failed");
                }
                // Unparked by `shutdown_within`.
                std::thread::park_timeout(Duration::from_secs(1));
            }
        })?;
        *self.publisher.lock().unwrap_or_else(|p| p.into_inner()) = Some(publisher);
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
        self.stopping.store(true, Ordering::Release);
        let pools = std::mem::take(&mut *self.pools.lock().unwrap_or_else(|p| p.into_inner()));
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
        if let Some(publisher) = self.publisher.lock().unwrap_or_else(|p| p.into_inner()).take() {
            publisher.thread().unpark();
            let _ = publisher.join();
        }
        in_time
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.shutdown();
    }
}
