//! The sandbox: runs one job in a fresh, limited instance and turns every
//! way it can end into a typed [`Ending`].
//!
//! Each job gets its own `Store` with a memory cap, table and instance
//! limits, an optional fuel budget, and an epoch deadline; WASI with no
//! preopened directories, no network, no environment and no arguments; and a
//! log (the `log` import, stdout and stderr) capped in bytes. The store is
//! dropped when the job ends, however it ends.
//!
//! A plugin is linked to only the interfaces its component imports (see
//! [`provided_imports`](crate::plugin::provided_imports)); a component importing anything else is refused at
//! load. Plugins are loaded through the sandbox that runs them
//! ([`Sandbox::load`]).

mod kill;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime::{Store, UpdateDeadline};

pub use kill::Kill;
use kill::{Failure, FailureContext, classify_error};

pub use crate::bindings::Job;
use crate::bindings::{Classification, operation};
use crate::capability::Grants;
use crate::engine::Engine;
use crate::fault::Fault;
use crate::guest::{Bound, JobLimiter, JobLog, JobNames, JobState};
pub use crate::guest::{CancelToken, GUEST_TARGET, LogStats, MemoryLimitExceeded};
use crate::linker::Linkers;
use crate::plugin::{Plugin, PluginError, World};

/// The limits of one job. `Limits::default()` gives:
///
/// - `deadline`: 10 s of wall time (measured in epoch ticks);
/// - `fuel`: `None` — no fuel budget (fuel must be enabled on the engine to
///   set one);
/// - `memory`: 64 MiB of linear memory;
/// - `max_output`: 1 MiB of output (or fault code plus body);
/// - `log_cap`: 64 KiB of log (the `log` import, stdout and stderr together);
/// - `table_elements`: 20,000 elements per table;
/// - `instances`: 64 core instances, tables and memories per store (a
///   Python component built by componentize-py instantiates 14 core
///   modules, and needed more than 16 at run time).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Wall time after which the job is killed (`husk.timeout`).
    pub deadline: Duration,
    /// Fuel budget (`husk.out-of-fuel` when spent); `None` for unlimited.
    pub fuel: Option<u64>,
    /// Largest linear memory, in bytes (`husk.memory-limit` past it).
    pub memory: u64,
    /// Largest output or fault (code plus body), in bytes; for an error
    /// mapper, largest string of its classification
    /// (`husk.output-too-large` past it).
    pub max_output: u64,
    /// Bytes of guest log kept per job; the rest is dropped.
    pub log_cap: u64,
    /// Largest table, in elements.
    pub table_elements: u32,
    /// Most core instances, tables and memories in one job's store.
    pub instances: u32,
}

impl Limits {
    /// Sets `deadline` (see the field).
    #[must_use]
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// Sets `fuel` (see the field).
    #[must_use]
    pub fn with_fuel(mut self, fuel: Option<u64>) -> Self {
        self.fuel = fuel;
        self
    }

    /// Sets `memory` (see the field).
    #[must_use]
    pub fn with_memory(mut self, memory: u64) -> Self {
        self.memory = memory;
        self
    }

    /// Sets `max_output` (see the field).
    #[must_use]
    pub fn with_max_output(mut self, max_output: u64) -> Self {
        self.max_output = max_output;
        self
    }

    /// Sets `log_cap` (see the field).
    #[must_use]
    pub fn with_log_cap(mut self, log_cap: u64) -> Self {
        self.log_cap = log_cap;
        self
    }

    /// Sets `table_elements` (see the field).
    #[must_use]
    pub fn with_table_elements(mut self, table_elements: u32) -> Self {
        self.table_elements = table_elements;
        self
    }

    /// Sets `instances` (see the field).
    #[must_use]
    pub fn with_instances(mut self, instances: u32) -> Self {
        self.instances = instances;
        self
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            deadline: Duration::from_secs(10),
            fuel: None,
            memory: 64 << 20,
            max_output: 1 << 20,
            log_cap: 64 << 10,
            table_elements: 20_000,
            instances: 64,
        }
    }
}

impl Limits {
    /// The small limits an error mapper runs with: 100 ms, 10 million units
    /// of fuel when fuel is enabled, 16 MiB of memory, and 64 KiB of output
    /// for each string of its classification (code, message, status,
    /// diagnostic).
    pub fn error_mapper() -> Self {
        Self {
            deadline: Duration::from_millis(100),
            fuel: Some(10_000_000),
            memory: 16 << 20,
            max_output: 64 << 10,
            log_cap: 16 << 10,
            ..Self::default()
        }
    }
}

/// One run of a guest: its ending and what it used.
#[derive(Debug, Clone, PartialEq)]
pub struct Execution<T = Vec<u8>> {
    /// How the run ended. For an operation, `T` is its output; for an
    /// error mapper, its classification.
    pub ending: Ending<T>,
    /// Wall time from store creation to the end of the call.
    pub elapsed: Duration,
    /// Fuel consumed, when fuel is enabled.
    pub fuel_consumed: Option<u64>,
    /// The largest linear memory the guest asked for, in bytes.
    pub peak_memory: u64,
    /// What the guest logged.
    pub log: LogStats,
}

/// How a run ended, generic over what success returns: an operation's
/// output (the default), an error mapper's classification. The one ending
/// type of husk: the sandbox returns it, a worker reports it, the
/// dispatcher judges it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending<T = Vec<u8>> {
    /// The guest returned normally.
    Returned(T),
    /// The guest returned a fault of its own (operations only).
    Fault(Fault),
    /// The host killed the run at a limit, or it trapped.
    Killed(Kill),
    /// The run was cancelled.
    Cancelled,
}

impl Execution {
    /// The raw `<code, body>` result: output, or the fault to classify (a
    /// guest fault, or a kill turned into its reserved fault). `None` for a
    /// cancelled job, which has no result.
    pub fn raw_result(&self) -> Option<Result<&[u8], Fault>> {
        match &self.ending {
            Ending::Returned(output) => Some(Ok(output)),
            Ending::Fault(fault) => Some(Err(fault.clone())),
            Ending::Killed(kill) => Some(Err(kill.to_fault(self.elapsed))),
            Ending::Cancelled => None,
        }
    }
}

/// Misuse of the sandbox by its caller (not something a guest did).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// The plugin was not loaded as (and does not export) the needed world.
    #[error("plugin {digest} is not an {world}")]
    NotA {
        /// The plugin's digest.
        digest: String,
        /// The world that was needed.
        world: World,
    },
    /// A fuel budget was asked for but the engine has fuel disabled.
    #[error("a fuel budget needs an engine with fuel enabled")]
    FuelDisabled,
}

/// Loads plugins and runs guests on an [`Engine`]. Each plugin is linked to
/// only the interfaces it imports (see [`provided_imports`](crate::plugin::provided_imports)); the sandbox keeps
/// one linker per set of interfaces for the plugins it loads. Cheap to
/// clone.
///
/// Every way a job can wait is bounded by its deadline and its cancel: code
/// in WebAssembly is interrupted by the epoch deadline (whose callback also
/// checks the cancel token at every tick), and a job waiting in a host call
/// (a WASI sleep, a poll of a pollable that never becomes ready, a blocking
/// stream operation) is woken at the first epoch tick past its deadline or
/// after its cancel, and the call traps (see `waits`). Either way the
/// instance is dropped and the thread takes its next job.
#[derive(Clone)]
pub struct Sandbox {
    engine: Engine,
    linkers: Arc<Linkers>,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox").field("engine", &self.engine).finish_non_exhaustive()
    }
}

impl Sandbox {
    /// A sandbox on `engine`.
    ///
    /// # Errors
    ///
    /// When the host functions cannot be linked (a bug, not an input error).
    pub fn new(engine: Engine) -> wasmtime::Result<Self> {
        crate::linker::link_all(engine.wasmtime())?;
        Ok(Self { engine, linkers: Arc::default() })
    }

    /// The engine jobs run on.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Loads the component in the file at `path` as `world`. A file of
    /// precompiled machine code (`husk compile`'s `.cwasm`) is refused; see
    /// [`Sandbox::load_trusted`].
    ///
    /// # Errors
    ///
    /// [`PluginError`] when the file cannot be read, is not a component,
    /// imports what husk does not provide, or does not export `world`'s
    /// function with the contract's type.
    pub fn load(&self, path: &Path, world: World) -> Result<Plugin, PluginError> {
        let (bytes, source_name) = crate::plugin::read(path)?;
        self.load_bytes(&bytes, world, &source_name)
    }

    /// Loads a component from `bytes` as `world`; `source_name` names it in
    /// errors. The bytes are compiled by husk: precompiled machine code is
    /// refused ([`PluginError::Precompiled`]), so bytes from anyone (a
    /// tenant's deploy) are safe to pass.
    ///
    /// # Errors
    ///
    /// As [`Sandbox::load`].
    pub fn load_bytes(&self, bytes: &[u8], world: World, source_name: &str) -> Result<Plugin, PluginError> {
        self.load_granted(bytes, world, source_name, &Grants::default())
    }

    /// [`Sandbox::load_bytes`] for a topic that grants `grants`: a component
    /// importing `wasi:http` or `wasi:config` loads only if they grant it.
    ///
    /// # Errors
    ///
    /// As [`Sandbox::load`].
    pub fn load_granted(
        &self,
        bytes: &[u8],
        world: World,
        source_name: &str,
        grants: &Grants,
    ) -> Result<Plugin, PluginError> {
        Plugin::compile(&self.engine, &self.linkers, bytes, world, source_name, grants)
    }

    /// Loads the file at `path` as `world`: a component, or machine code
    /// precompiled by `husk compile` for a compatible engine.
    ///
    /// # Errors
    ///
    /// As [`Sandbox::load`]; [`PluginError::Invalid`] for precompiled code
    /// from an incompatible engine.
    ///
    /// # Safety
    ///
    /// As [`Sandbox::load_trusted_bytes`]: the file must be the operator's
    /// own.
    #[allow(unsafe_code)]
    pub unsafe fn load_trusted(&self, path: &Path, world: World) -> Result<Plugin, PluginError> {
        let (bytes, source_name) = crate::plugin::read(path)?;
        // SAFETY: this function's own contract, passed on to its caller.
        unsafe { self.load_trusted_bytes(&bytes, world, &source_name, &Grants::default()) }
    }

    /// Loads `bytes` as `world` for a topic granting `grants`: a component,
    /// or machine code precompiled by `husk compile` for a compatible engine.
    ///
    /// # Errors
    ///
    /// As [`Sandbox::load_trusted`].
    ///
    /// # Safety
    ///
    /// Precompiled code runs in this process with all of husk's rights (see
    /// [`Engine::load_precompiled`]): the bytes must come from the operator's
    /// own file — the unmodified output of `husk compile`, which no tenant,
    /// API caller or other user can write.
    #[allow(unsafe_code)]
    pub unsafe fn load_trusted_bytes(
        &self,
        bytes: &[u8],
        world: World,
        source_name: &str,
        grants: &Grants,
    ) -> Result<Plugin, PluginError> {
        // SAFETY: this function's own contract, passed on to its caller.
        unsafe { Plugin::compile_trusted(&self.engine, &self.linkers, bytes, world, source_name, grants) }
    }

    /// Runs `job` on the operation `plugin` with `limits`, on the calling
    /// thread (a guest waiting in a host call waits on a small runtime of
    /// that thread: call it from plain code, not from inside an async
    /// runtime).
    ///
    /// # Errors
    ///
    /// [`SandboxError`] when the plugin is not an operation or the limits ask
    /// for fuel on an engine without it. Everything the guest does is in the
    /// returned [`Execution`].
    pub fn execute(
        &self,
        plugin: &Plugin,
        job: &Job,
        limits: &Limits,
        cancel: Option<&CancelToken>,
    ) -> Result<Execution, SandboxError> {
        self.execute_granted(plugin, job, limits, &Grants::default(), cancel)
    }

    /// [`Sandbox::execute`] for a topic granting `grants`: the job may call
    /// the hosts they allow and read the config they hold; its secrets are
    /// replaced by `***` in its log, its output and the faults it returns.
    ///
    /// # Errors
    ///
    /// As [`Sandbox::execute`].
    pub fn execute_granted(
        &self,
        plugin: &Plugin,
        job: &Job,
        limits: &Limits,
        grants: &Grants,
        cancel: Option<&CancelToken>,
    ) -> Result<Execution, SandboxError> {
        let pre = plugin
            .operation_pre()
            .ok_or_else(|| SandboxError::NotA { digest: plugin.digest().to_owned(), world: World::Operation })?;
        let mut run = self.start(&job.id, &job.topic, limits, grants, cancel)?;
        let store = &mut run.store;
        let result = with_pool_retry(|| pre.instantiate(&mut *store))
            .and_then(|instance| instance.call_execute(&mut *store, job));
        Ok(run.finish(result).and_then_returned(|result| {
            // Secrets out of what husk stores, before husk wraps or encodes
            // anything: a guard against a guest returning one by mistake
            // (not against one that encodes it).
            let redactor = grants.redactor();
            let result = result.map(|output| redactor.redact_bytes(output)).map_err(|fault| {
                Fault::from_guest(redactor.redact(&fault.code).into_owned(), redactor.redact_bytes(fault.body))
            });
            let size = match &result {
                Ok(output) => output.len(),
                Err(fault) => fault.code.len() + fault.body.len(),
            } as u64;
            if size > limits.max_output {
                return Ending::Killed(Kill::OutputTooLarge { limit: limits.max_output, size });
            }
            match result {
                Ok(output) => Ending::Returned(output),
                Err(fault) => Ending::Fault(fault),
            }
        }))
    }

    /// Runs the error mapper `plugin` on `fault` with `limits`, on the
    /// calling thread (as [`Sandbox::execute`]). Each string of the
    /// classification (code, message, status, diagnostic) may be at most
    /// `limits.max_output` bytes; past that the run ends
    /// [`Kill::OutputTooLarge`].
    ///
    /// # Errors
    ///
    /// As [`Sandbox::execute`].
    pub fn classify(
        &self,
        plugin: &Plugin,
        fault: &Fault,
        limits: &Limits,
    ) -> Result<Execution<Classification>, SandboxError> {
        let pre = plugin
            .error_mapper_pre()
            .ok_or_else(|| SandboxError::NotA { digest: plugin.digest().to_owned(), world: World::ErrorMapper })?;
        let wit_fault = operation::husk::worker::types::Fault { code: fault.code.clone(), body: fault.body.clone() };
        let mut run = self.start("", "error-mapper", limits, &Grants::default(), None)?;
        let store = &mut run.store;
        let result = with_pool_retry(|| pre.instantiate(&mut *store))
            .and_then(|instance| instance.call_classify(&mut *store, &wit_fault));
        Ok(run.finish(result).and_then_returned(|classification| {
            let size = classification_strings(&classification).map(str::len).max().unwrap_or(0) as u64;
            if size > limits.max_output {
                return Ending::Killed(Kill::OutputTooLarge { limit: limits.max_output, size });
            }
            Ending::Returned(classification)
        }))
    }

    /// A fresh store for one run with `limits`: memory cap, fuel budget,
    /// and its bound (deadline and cancel) armed for WebAssembly and for
    /// host calls.
    fn start(
        &self,
        job_id: &str,
        topic: &str,
        limits: &Limits,
        grants: &Grants,
        cancel: Option<&CancelToken>,
    ) -> Result<Run, SandboxError> {
        let fuel_enabled = self.engine.config().fuel;
        if limits.fuel.is_some() && !fuel_enabled {
            return Err(SandboxError::FuelDisabled);
        }
        let started = Instant::now();
        let log = JobLog::new(job_id, topic, limits.log_cap, grants.redactor());
        let limiter = JobLimiter {
            memory_cap: usize::try_from(limits.memory).unwrap_or(usize::MAX),
            table_elements: limits.table_elements as usize,
            instances: limits.instances as usize,
            peak_memory: 0,
        };
        let bound = Bound {
            engine: self.engine.clone(),
            started_at: self.engine.epoch(),
            ticks: self.engine.ticks_for(limits.deadline),
            cancel: cancel.cloned(),
        };
        let names = JobNames { id: job_id, topic, deadline_at: started + limits.deadline };
        let state = JobState::new(log.clone(), limiter, bound, grants, names);
        let mut store = Store::new(self.engine.wasmtime(), state);
        store.limiter(|state| &mut state.limiter);
        let fuel_budget = fuel_enabled.then(|| limits.fuel.unwrap_or(u64::MAX));
        if let Some(budget) = fuel_budget {
            store.set_fuel(budget).expect("fuel is enabled on this engine");
        }
        // At every tick while WebAssembly runs: the same check as a wait's.
        // Wasmtime counts `Continue(1)` from the epoch when the callback
        // returns, so a tick that lands during the callback is seen at the
        // next one: a spinning guest may be stopped one tick late.
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(|store| match store.data().bound.check() {
            Some(stop) => Err(stop),
            None => Ok(UpdateDeadline::Continue(1)),
        });
        let cx = FailureContext {
            deadline: limits.deadline,
            elapsed: Duration::ZERO,
            fuel: limits.fuel,
            max_wasm_stack: self.engine.config().max_wasm_stack,
            guest_message: None,
        };
        Ok(Run { store, started, log, fuel_budget, cx })
    }
}

/// One run in progress: its store and what [`Run::finish`] needs to turn
/// the run's result into an [`Execution`].
struct Run {
    store: Store<JobState>,
    started: Instant,
    log: JobLog,
    fuel_budget: Option<u64>,
    cx: FailureContext,
}

impl Run {
    /// Drops the store (the instance with it) and maps every way the run
    /// can have ended.
    fn finish<R>(self, result: wasmtime::Result<R>) -> Execution<R> {
        let Run { store, started, log, fuel_budget, cx } = self;
        let elapsed = started.elapsed();
        let fuel_consumed = fuel_budget.map(|budget| budget - store.get_fuel().unwrap_or(0));
        let peak_memory = store.data().limiter.peak_memory as u64;
        drop(store);
        log.finish();
        let ending = match result {
            Ok(value) => Ending::Returned(value),
            Err(error) => {
                let cx = FailureContext { elapsed, guest_message: log.stderr_tail(), ..cx };
                match classify_error(&error, cx) {
                    Failure::Cancelled => Ending::Cancelled,
                    Failure::Killed(kill) => Ending::Killed(kill),
                }
            }
        };
        Execution { ending, elapsed, fuel_consumed, peak_memory, log: log.stats() }
    }
}

/// Every string of a classification, whose sizes the mapper's output cap
/// bounds.
fn classification_strings(classification: &Classification) -> impl Iterator<Item = &str> {
    let (first, second) = match classification {
        Classification::Technical(diagnostic) | Classification::TechnicalNonRetryable(diagnostic) => {
            (diagnostic.as_str(), None)
        }
        Classification::BusinessError(error) => (error.code.as_str(), Some(error.message.as_str())),
        Classification::BusinessStatus(status) => (status.as_str(), None),
    };
    std::iter::once(first).chain(second)
}

impl<T> Execution<T> {
    fn and_then_returned<U>(self, f: impl FnOnce(T) -> Ending<U>) -> Execution<U> {
        let ending = match self.ending {
            Ending::Returned(value) => f(value),
            Ending::Fault(fault) => Ending::Fault(fault),
            Ending::Killed(kill) => Ending::Killed(kill),
            Ending::Cancelled => Ending::Cancelled,
        };
        Execution {
            ending,
            elapsed: self.elapsed,
            fuel_consumed: self.fuel_consumed,
            peak_memory: self.peak_memory,
            log: self.log,
        }
    }
}

/// How long an instantiation waits for a pool slot that another thread is
/// freeing before the job fails with the pool's error.
const POOL_WAIT: Duration = Duration::from_secs(2);

/// Tries an instantiation again while the pooling allocator reports its
/// slots exhausted, for up to [`POOL_WAIT`]: slots freed by jobs that just
/// ended can sit in another thread's decommit queue, or be briefly held
/// while wasmtime reclaims the warm slots of a dropped module (a hot swap).
/// Such a moment is the host's, not the job's: it must not cost the job an
/// attempt. The wait is bounded in time, not in tries, because the thread
/// freeing the slot may be descheduled for longer than a burst of tries on a
/// loaded machine.
fn with_pool_retry<T>(mut instantiate: impl FnMut() -> wasmtime::Result<T>) -> wasmtime::Result<T> {
    let started = Instant::now();
    let mut tries = 0u32;
    loop {
        match instantiate() {
            Err(error) if error.is::<wasmtime::PoolConcurrencyLimitError>() && started.elapsed() < POOL_WAIT => {
                tries += 1;
                // Spin briefly (a slot usually frees within microseconds),
                // then sleep so a long wait does not burn a core.
                if tries < 100 {
                    std::thread::yield_now();
                } else {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            result => return result,
        }
    }
}
