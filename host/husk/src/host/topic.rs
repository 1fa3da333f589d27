//! Topics to register: what runs a topic's jobs (a plugin or a native
//! handler), with its limits, pool, retry policy and error mapper.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::capability::Grants;
use crate::classify::{ErrorMapper, Rule, Rules};
use crate::dispatch::TopicPolicy;
use crate::periodic::Schedule;
use crate::permanent::PermanentFaults;
use crate::plugin::{Plugin, PluginError, World};
use crate::retry::RetryPolicySpec;
use crate::sandbox::{Limits, Sandbox};
use crate::worker::{Handler, PoolConfig};

use super::HostError;

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
    pub(super) fn bytes(&self) -> Result<(std::borrow::Cow<'_, [u8]>, String), PluginError> {
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

    pub(super) fn load(&self, sandbox: &Sandbox, world: World, grants: &Grants) -> Result<Plugin, PluginError> {
        let (bytes, name) = self.bytes()?;
        self.load_bytes(sandbox, &bytes, world, &name, grants)
    }

    /// Loads `bytes` read from this source.
    #[allow(unsafe_code)]
    pub(super) fn load_bytes(
        &self,
        sandbox: &Sandbox,
        bytes: &[u8],
        world: World,
        name: &str,
        grants: &Grants,
    ) -> Result<Plugin, PluginError> {
        match self {
            // SAFETY: the bytes are the operator's file's, which
            // `OperatorFile::new`'s caller vouched for.
            PluginSource::Operator(_) => unsafe { sandbox.load_trusted_bytes(bytes, world, name, grants) },
            PluginSource::Path(_) | PluginSource::Bytes { .. } => sandbox.load_granted(bytes, world, name, grants),
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
pub(super) enum Runner {
    Wasm(PluginSource),
    Native(Arc<dyn Handler>),
}

/// A topic to register: `Topic::wasm(name, source)` or
/// `Topic::native(name, handler)`, then the `with_*` settings. Defaults:
/// [`Limits::default`], [`PoolConfig::default`] with the lock duration set to
/// the deadline times the fetch batch plus 30 s, no topic retry policy (the
/// engine-wide default applies), no error mapper (every fault technical),
/// inputs kept with their outcomes.
#[derive(Clone)]
pub struct Topic {
    pub(super) name: String,
    pub(super) tenant: Option<String>,
    pub(super) runner: Runner,
    pub(super) limits: Limits,
    pub(super) pool: PoolConfig,
    pub(super) lock_duration: Option<Duration>,
    pub(super) retry: Option<RetryPolicySpec>,
    pub(super) mapper: Option<MapperSpec>,
    pub(super) mapper_deadline: Option<Duration>,
    pub(super) grants: Grants,
    pub(super) drop_input: bool,
    pub(super) permanent: Option<PermanentFaults>,
    pub(super) schedule: Option<Schedule>,
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
            grants: Grants::default(),
            drop_input: false,
            permanent: None,
            schedule: None,
        }
    }

    /// Grants the topic's jobs `grants` (outbound HTTP, config): a
    /// component importing `wasi:http` or `wasi:config` loads only for a
    /// topic granting it. The error mapper is granted nothing.
    #[must_use]
    pub fn with_grants(mut self, grants: Grants) -> Self {
        self.grants = grants;
        self
    }

    /// What the topic grants its jobs.
    pub fn grants(&self) -> &Grants {
        &self.grants
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

    /// Drops each job's input when it ends (personal data, say), instead
    /// of keeping it with the outcome until the outcome is pruned. An open
    /// incident keeps its input until it is retried or discarded.
    #[must_use]
    pub fn dropping_inputs(mut self) -> Self {
        self.drop_input = true;
        self
    }

    /// Whether the topic drops its jobs' inputs when they end
    /// ([`Topic::dropping_inputs`]).
    pub fn drops_inputs(&self) -> bool {
        self.drop_input
    }

    /// Makes the topic's periodic jobs: one per tick of `schedule`, in
    /// every process running the topic, once across them all (see
    /// [`crate::periodic`]).
    #[must_use]
    pub fn with_schedule(mut self, schedule: Schedule) -> Self {
        self.schedule = Some(schedule);
        self
    }

    /// The topic's schedule of periodic jobs, if it has one.
    pub fn schedule(&self) -> Option<&Schedule> {
        self.schedule.as_ref()
    }

    /// Sets the technical faults the topic never retries, replacing the
    /// engine-wide list ([`HostBuilder::permanent_faults`](super::HostBuilder::permanent_faults)).
    #[must_use]
    pub fn with_permanent_faults(mut self, faults: PermanentFaults) -> Self {
        self.permanent = Some(faults);
        self
    }

    /// The technical faults the topic never retries: its own list, or once
    /// the host is built the engine-wide one it fell back to.
    pub fn permanent_faults(&self) -> PermanentFaults {
        self.permanent.clone().unwrap_or_default()
    }

    /// How the dispatcher treats the topic's jobs, with `mapper`.
    pub(super) fn policy(&self, mapper: Option<ErrorMapper>) -> TopicPolicy {
        TopicPolicy { retry: self.retry, mapper, drop_input: self.drop_input, permanent: self.permanent_faults() }
    }

    /// Sets the topic's error mapper.
    #[must_use]
    pub fn with_mapper(mut self, mapper: MapperSpec) -> Self {
        self.mapper = Some(mapper);
        self
    }

    /// The limits of each job.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The topic's own retry policy, if it set one (else the engine-wide
    /// default applies: [`Host::retry_of`](super::Host::retry_of)).
    pub fn retry(&self) -> Option<RetryPolicySpec> {
        self.retry
    }

    /// Whether the topic's faults go through an error mapper (else every
    /// fault is technical).
    pub fn has_mapper(&self) -> bool {
        self.mapper.is_some()
    }

    /// Its workers, fetch batch and lock duration, the default lock
    /// duration resolved.
    pub fn pool_config(&self) -> PoolConfig {
        let batch = self.pool.fetch_batch.max(1) as u32;
        let lock_duration =
            self.lock_duration.unwrap_or_else(|| self.limits.deadline.saturating_mul(batch) + Duration::from_secs(30));
        PoolConfig { lock_duration, ..self.pool.clone() }
    }
}

/// `plugin` as `topic`'s error mapper in `sandbox`, with
/// [`Limits::error_mapper`] (the topic's mapper deadline, if it set one;
/// without fuel when the engine does not meter it).
pub(super) fn wasm_mapper(sandbox: &Sandbox, topic: &Topic, plugin: Plugin) -> ErrorMapper {
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
pub(super) fn load_mapper(
    sandbox: &Sandbox,
    topic: &Topic,
    own: Option<&Plugin>,
) -> Result<Option<ErrorMapper>, HostError> {
    let plugin_error = |error| HostError::Plugin { topic: topic.name.clone(), error };
    Ok(match &topic.mapper {
        None => None,
        Some(MapperSpec::Rules(rules)) => Some(ErrorMapper::Rules(
            Rules::new(rules.clone()).map_err(|error| HostError::Rules { topic: topic.name.clone(), error })?,
        )),
        Some(MapperSpec::Plugin(source)) => Some(wasm_mapper(
            sandbox,
            topic,
            source.load(sandbox, World::ErrorMapper, &Grants::default()).map_err(plugin_error)?,
        )),
        Some(MapperSpec::SamePlugin) => {
            let plugin = own
                .filter(|p| p.is_error_mapper())
                .cloned()
                .ok_or_else(|| HostError::NoClassify(topic.name.clone()))?;
            Some(wasm_mapper(sandbox, topic, plugin))
        }
    })
}
