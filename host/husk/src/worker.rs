//! Worker pools: threads that fetch a topic's jobs, run each (in the
//! sandbox, or a native handler), and report. Wasm runs on these threads,
//! never on an async runtime, so a guest spinning to its deadline holds up
//! nothing but its own worker.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use arc_swap::ArcSwap;

use crate::capability::Grants;
use crate::dispatch::{Dispatcher, LastFetch, Pending};
use crate::plugin::Plugin;
use crate::quota::ConcurrencyGate;
use crate::sandbox::{CancelToken, Ending, Job, Kill, Limits, Sandbox};
use crate::store::{AttemptRun, FetchRequest, Lock, LockedJob, Report, Reported};

/// What a handler made of one job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handled {
    /// How the run ended.
    pub ending: Ending,
    /// How long it ran.
    pub elapsed: Duration,
    /// The version (plugin digest) that ran it, if any.
    pub plugin_version: Option<String>,
    /// Fuel the run consumed, when fuel is metered.
    pub fuel_consumed: Option<u64>,
}

impl Handled {
    /// A run of no measured length by no plugin version (a native
    /// handler's) that ended `ending`.
    pub fn new(ending: Ending) -> Self {
        Self { ending, elapsed: Duration::ZERO, plugin_version: None, fuel_consumed: None }
    }

    /// A run that failed in the host itself (the sandbox could not run it,
    /// or a handler panicked): a `husk.host-error` with `message`, never a
    /// guest's trap.
    pub fn host_error(message: &str, plugin_version: Option<String>) -> Self {
        let kill = Kill::HostError { reason: message.to_owned() };
        Self { plugin_version, ..Self::new(Ending::Killed(kill)) }
    }

    /// The reserved code when the run was killed at a limit or trapped.
    pub fn killed(&self) -> Option<&'static str> {
        match &self.ending {
            Ending::Killed(kill) => Some(kill.code()),
            _ => None,
        }
    }
}

/// Runs one job. Implemented by [`WasmHandler`]; a native implementation
/// runs the same pipeline without a sandbox (benchmarks, tests).
pub trait Handler: Send + Sync + 'static {
    /// Runs `job`; `cancel` is set when the job's owner cancels it.
    fn handle(&self, job: &LockedJob, cancel: &CancelToken) -> Handled;

    /// A handler bound to the version current now, which a worker runs a
    /// fetched batch on: jobs run on the version that was current when they
    /// were fetched, whatever is deployed while they wait or run. `None`
    /// (the default) when the handler has no versions.
    fn pinned(&self) -> Option<Arc<dyn Handler>> {
        None
    }
}

/// What the host wants to know of each attempt (metrics).
pub trait AttemptObserver: Send + Sync + 'static {
    /// An attempt of a `topic` job ran and ended as `handled`.
    fn attempted(&self, topic: &str, handled: &Handled);
    /// A `topic` job's technical fault was re-armed for a retry.
    fn retried(&self, topic: &str);
}

/// Runs jobs on a topic's current plugin in the sandbox. The plugin can be
/// swapped while jobs run: each job runs start to end on the version it
/// started with.
#[derive(Debug)]
pub struct WasmHandler {
    sandbox: Sandbox,
    plugin: ArcSwap<Plugin>,
    limits: Limits,
    grants: ArcSwap<Grants>,
}

impl WasmHandler {
    /// A handler running `plugin` with `limits`, granting nothing.
    pub fn new(sandbox: Sandbox, plugin: Plugin, limits: Limits) -> Self {
        Self::granted(sandbox, plugin, limits, Grants::default())
    }

    /// A handler running `plugin` with `limits`, its jobs granted `grants`
    /// (the plugin must have been loaded with them).
    pub fn granted(sandbox: Sandbox, plugin: Plugin, limits: Limits, grants: Grants) -> Self {
        Self { sandbox, plugin: ArcSwap::from_pointee(plugin), limits, grants: ArcSwap::from_pointee(grants) }
    }

    /// Makes `plugin`, loaded with `grants`, the version new jobs run on,
    /// with those grants (whose secrets may have been read again).
    pub fn swap_granted(&self, plugin: Plugin, grants: Grants) -> Arc<Plugin> {
        self.grants.store(Arc::new(grants));
        self.swap(plugin)
    }

    /// The plugin new jobs run on.
    pub fn plugin(&self) -> Arc<Plugin> {
        self.plugin.load_full()
    }

    /// Makes `plugin` the version new jobs run on.
    pub fn swap(&self, plugin: Plugin) -> Arc<Plugin> {
        self.plugin.swap(Arc::new(plugin))
    }

    /// The limits jobs run with.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }
}

impl Handler for WasmHandler {
    fn handle(&self, job: &LockedJob, cancel: &CancelToken) -> Handled {
        run_wasm(&self.sandbox, &self.plugin.load_full(), &self.limits, &self.grants.load(), job, cancel)
    }

    fn pinned(&self) -> Option<Arc<dyn Handler>> {
        let plugin = self.plugin.load_full();
        let grants = self.grants.load_full();
        Some(Arc::new(PinnedWasm { sandbox: self.sandbox.clone(), plugin, limits: self.limits.clone(), grants }))
    }
}

/// A [`WasmHandler`] bound to one version (see [`Handler::pinned`]).
struct PinnedWasm {
    sandbox: Sandbox,
    plugin: Arc<Plugin>,
    limits: Limits,
    grants: Arc<Grants>,
}

impl Handler for PinnedWasm {
    fn handle(&self, job: &LockedJob, cancel: &CancelToken) -> Handled {
        run_wasm(&self.sandbox, &self.plugin, &self.limits, &self.grants, job, cancel)
    }
}

/// Runs `job` on `plugin` in the sandbox.
fn run_wasm(
    sandbox: &Sandbox,
    plugin: &Plugin,
    limits: &Limits,
    grants: &Grants,
    job: &LockedJob,
    cancel: &CancelToken,
) -> Handled {
    let wit_job =
        Job { id: job.id().to_string(), topic: job.topic.clone(), attempt: job.attempt, input: job.input.clone() };
    let version = Some(plugin.digest().to_owned());
    let execution = match sandbox.execute_granted(plugin, &wit_job, limits, grants, Some(cancel)) {
        Ok(execution) => execution,
        Err(error) => {
            return Handled::host_error(&error.to_string(), version);
        }
    };
    Handled {
        ending: execution.ending,
        elapsed: execution.elapsed,
        plugin_version: version,
        fuel_consumed: execution.fuel_consumed,
    }
}

/// How a topic's pool runs. `PoolConfig::default()` gives:
///
/// - `workers`: the number of CPU cores;
/// - `fetch_batch`: 1 job per fetch;
/// - `poll`: 1 s long-poll per fetch;
/// - `lock_duration`: 60 s (set it above the topic's deadline times
///   `fetch_batch`: a lock that expires while its job runs costs an attempt).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolConfig {
    /// Worker threads.
    pub workers: usize,
    /// Jobs locked per fetch.
    pub fetch_batch: usize,
    /// How long one fetch waits for a job.
    pub poll: Duration,
    /// How long a fetched job stays locked.
    pub lock_duration: Duration,
}

impl PoolConfig {
    /// Sets `workers` (see the field).
    #[must_use]
    pub fn with_workers(mut self, workers: usize) -> Self {
        self.workers = workers;
        self
    }

    /// Sets `fetch_batch` (see the field).
    #[must_use]
    pub fn with_fetch_batch(mut self, fetch_batch: usize) -> Self {
        self.fetch_batch = fetch_batch;
        self
    }

    /// Sets `poll` (see the field).
    #[must_use]
    pub fn with_poll(mut self, poll: Duration) -> Self {
        self.poll = poll;
        self
    }

    /// Sets `lock_duration` (see the field).
    #[must_use]
    pub fn with_lock_duration(mut self, lock_duration: Duration) -> Self {
        self.lock_duration = lock_duration;
        self
    }
}

impl Default for PoolConfig {
    fn default() -> Self {
        Self {
            workers: std::thread::available_parallelism().map_or(2, |n| n.get()),
            fetch_batch: 1,
            poll: Duration::from_secs(1),
            lock_duration: Duration::from_secs(60),
        }
    }
}

/// What a pool shares beyond its topic: the tenant's concurrency gate
/// (shared by every pool of the tenant) and an observer of attempts.
#[derive(Clone, Default)]
pub struct PoolHooks {
    /// Bounds the tenant's running jobs across its topics.
    pub gate: Option<Arc<ConcurrencyGate>>,
    /// Told of every attempt and retry (metrics).
    pub observer: Option<Arc<dyn AttemptObserver>>,
}

impl std::fmt::Debug for PoolHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolHooks").field("gate", &self.gate).finish_non_exhaustive()
    }
}

/// The worker threads of one topic.
#[derive(Debug)]
pub struct WorkerPool {
    topic: String,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    dispatcher: Arc<Dispatcher>,
}

impl WorkerPool {
    /// Starts `config.workers` threads running `topic`'s jobs on `handler`.
    ///
    /// # Errors
    ///
    /// When a thread cannot be spawned.
    pub fn start(
        dispatcher: Arc<Dispatcher>,
        topic: &str,
        handler: Arc<dyn Handler>,
        config: &PoolConfig,
    ) -> std::io::Result<Self> {
        Self::start_with(dispatcher, topic, handler, config, PoolHooks::default())
    }

    /// [`WorkerPool::start`] with a tenant's concurrency gate and an
    /// observer of attempts.
    ///
    /// # Errors
    ///
    /// When a thread cannot be spawned.
    pub fn start_with(
        dispatcher: Arc<Dispatcher>,
        topic: &str,
        handler: Arc<dyn Handler>,
        config: &PoolConfig,
        hooks: PoolHooks,
    ) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..config.workers.max(1))
            .map(|i| {
                let worker = Worker {
                    name: format!("{topic}-{i}-{}", std::process::id()),
                    topics: vec![topic.to_owned()],
                    dispatcher: dispatcher.clone(),
                    handler: handler.clone(),
                    config: config.clone(),
                    hooks: hooks.clone(),
                    stop: stop.clone(),
                };
                std::thread::Builder::new().name(format!("husk-{topic}-{i}")).spawn(move || worker.run())
            })
            .collect::<std::io::Result<_>>()?;
        Ok(Self { topic: topic.to_owned(), stop, threads, dispatcher })
    }

    /// The topic.
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// Stops fetching, lets each worker finish the job it runs (jobs of its
    /// batch not yet started are released unspent), and joins the threads.
    pub fn stop(mut self) {
        self.stop_and_join();
    }

    /// Stops fetching without waiting (see [`WorkerPool::stop`]).
    pub fn begin_stop(&self) {
        self.stop.store(true, Ordering::Release);
        self.dispatcher.wake_fetchers();
    }

    /// Whether every worker thread has ended.
    pub fn is_finished(&self) -> bool {
        self.threads.iter().all(JoinHandle::is_finished)
    }

    fn stop_and_join(&mut self) {
        self.begin_stop();
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// How many batches' reports a worker may have waiting for the completer
/// (see `dispatch::complete`) before it waits for the oldest: enough to
/// keep a worker of small batches busy through a commit's flush, few
/// enough that a store that is down soon holds the worker up.
const MAX_PENDING_BATCHES: usize = 16;

struct Worker {
    name: String,
    topics: Vec<String>,
    dispatcher: Arc<Dispatcher>,
    handler: Arc<dyn Handler>,
    config: PoolConfig,
    hooks: PoolHooks,
    stop: Arc<AtomicBool>,
}

impl Worker {
    fn run(self) {
        let mut store_failures = 0u32;
        // Batches whose reports commit in the background, oldest first.
        let mut pending: VecDeque<Pending> = VecDeque::new();
        let mut last = LastFetch::default();
        while !self.stop.load(Ordering::Acquire) {
            let request = FetchRequest {
                worker: &self.name,
                topics: &self.topics,
                max: self.config.fetch_batch,
                lock_duration: self.config.lock_duration,
            };
            let gate = self.hooks.gate.as_deref();
            let fetched = self.dispatcher.fetch_and_lock(request, self.config.poll, &self.stop, gate, &mut last);
            let jobs = match fetched {
                Ok(jobs) => {
                    store_failures = 0;
                    jobs
                }
                Err(error) => {
                    store_failures = (store_failures + 1).min(6);
                    tracing::error!(worker = %self.name, %error, "fetch failed; backing off");
                    std::thread::sleep(Duration::from_millis(50 << store_failures));
                    continue;
                }
            };
            // The batch runs on the version current now, when it was fetched.
            let pinned = self.handler.pinned();
            let handler: &dyn Handler = pinned.as_deref().unwrap_or(&*self.handler);
            let mut guards = Vec::with_capacity(jobs.len());
            let mut reports = Vec::with_capacity(jobs.len());
            for job in &jobs {
                if self.stop.load(Ordering::Acquire) {
                    // Shutting down: what has not started goes back unspent.
                    reports.push((job.lock, Report::Release));
                    continue;
                }
                let guard = self.dispatcher.running(job.id());
                let started_at = self.dispatcher.clock().now();
                let span = tracing::debug_span!("job", job.id = %job.id(), topic = %job.topic, attempt = job.attempt);
                let handled = span.in_scope(|| Self::run_one(handler, job, guard.token()));
                if let Some(code) = handled.killed() {
                    self.dispatcher.count_kill(code);
                }
                if let Some(observer) = &self.hooks.observer {
                    observer.attempted(&job.topic, &handled);
                }
                let report = if handled.ending == Ending::Cancelled && self.dispatcher.interrupting() {
                    // Interrupted at the end of a shutdown's grace period.
                    Report::Release
                } else {
                    let run = AttemptRun {
                        plugin_version: handled.plugin_version,
                        started_at: Some(started_at),
                        duration: Some(handled.elapsed),
                        fuel: handled.fuel_consumed,
                    };
                    self.dispatcher.judge(job, handled.ending, run)
                };
                reports.push((job.lock, report));
                guards.push(guard);
            }
            // The guest runs no more: a cancel from now on has nothing to stop.
            drop(guards);
            if pending.len() >= MAX_PENDING_BATCHES
                && let Some(oldest) = pending.pop_front()
            {
                oldest.wait();
            }
            pending.push_back(self.submit(jobs, reports));
        }
        pending.into_iter().for_each(Pending::wait);
    }

    /// Submits a batch's reports (see [`Dispatcher::hand_off`]: a store
    /// that is unavailable — a restarting server, a full disk — is tried
    /// again while the batch's locks last). When they are done with, the
    /// tenant's permits for the batch come back.
    fn submit(&self, jobs: Vec<LockedJob>, reports: Vec<(Lock, Report)>) -> Pending {
        let expires = jobs.iter().map(|j| j.lock_expires_at).min();
        let (dispatcher, hooks) = (self.dispatcher.clone(), self.hooks.clone());
        self.dispatcher.hand_off(reports, expires, move |results| {
            if let (Some(observer), Some(results)) = (&hooks.observer, &results) {
                for (job, result) in jobs.iter().zip(results) {
                    if *result == Reported::ReArmed {
                        observer.retried(&job.topic);
                    }
                }
            }
            if let Some(gate) = &hooks.gate
                && gate.give(jobs.len())
            {
                // Fetchers of the tenant's topics wait for a permit.
                dispatcher.wake_fetchers();
            }
        })
    }

    /// Runs one job; a panicking handler is a host error of that job, never
    /// the end of the worker.
    fn run_one(handler: &dyn Handler, job: &LockedJob, cancel: &CancelToken) -> Handled {
        catch_unwind(AssertUnwindSafe(|| handler.handle(job, cancel))).unwrap_or_else(|panic| {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "handler panicked".to_owned());
            tracing::error!(job.id = %job.id(), %message, "handler panicked");
            Handled::host_error(&message, None)
        })
    }
}
