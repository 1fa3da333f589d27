//! What one job's `Store` holds: its WASI context (deny-by-default), its
//! log, and the resource limiter that enforces its memory cap.
//!
//! The WASI context denies every capability a guest could reach through the
//! WASI interfaces it imports (see `imports`, which links only those):
//!
//! - no preopened directories: `wasi:filesystem/preopens` lists none, so no
//!   file can be opened;
//! - no environment variables, no arguments, no initial working directory;
//! - stdin closed (reads end at once); stdout and stderr go to the job's log,
//!   under its cap;
//! - no network: TCP, UDP and name lookup are all disallowed, and no socket
//!   address is permitted (the default address check refuses every one);
//!   outbound HTTP only as a topic grants it (see `capability`);
//! - config values only as a topic grants them;
//! - clocks and random numbers are the host's, which only reveal the time;
//! - every wait (a poll, a sleep, a blocking stream operation) is bounded by
//!   the job's deadline and cancel (see `waits`).
//!
//! Granting any of these is a deliberate change here, not a default.

use std::sync::{Arc, LazyLock};

use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_config::{WasiConfig, WasiConfigVariables};
#[cfg(feature = "http")]
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::logs::JobLog;
use super::stops::MemoryLimitExceeded;
use super::waits::{Bound, BoundedIo};
use crate::bindings::LogLevel;
use crate::bindings::operation::husk::worker::{log, types};
#[cfg(feature = "http")]
use crate::capability::HttpHooks;
use crate::capability::{ConfigGrant, Grants};

/// The data of one job's store.
pub(crate) struct JobState {
    /// Built on the guest's first WASI call: most jobs make none, and
    /// building a context (random state, stdio streams) is a measurable part
    /// of a small job's cost.
    wasi: Option<WasiCtx>,
    table: ResourceTable,
    pub(crate) log: JobLog,
    pub(crate) limiter: JobLimiter,
    /// When the run must stop: checked at every epoch tick in WebAssembly,
    /// and by every host call that waits.
    pub(crate) bound: Bound,
    /// Outbound HTTP, when the topic grants it.
    #[cfg(feature = "http")]
    http: Option<Box<JobHttp>>,
    /// Config values and secrets, when the topic grants them.
    config: Option<Arc<ConfigGrant>>,
}

/// A job's `wasi:http` state.
#[cfg(feature = "http")]
struct JobHttp {
    ctx: WasiHttpCtx,
    hooks: HttpHooks,
}

impl JobState {
    pub(crate) fn new(log: JobLog, limiter: JobLimiter, bound: Bound, grants: &Grants, job: JobNames<'_>) -> Self {
        #[cfg(feature = "http")]
        let http = grants.http.as_ref().map(|grant| {
            let hooks = HttpHooks::new(Some(grant.clone()), job.topic, job.id, job.deadline_at);
            Box::new(JobHttp { ctx: WasiHttpCtx::new(), hooks })
        });
        #[cfg(not(feature = "http"))]
        let _ = job;
        Self {
            wasi: None,
            table: ResourceTable::new(),
            log,
            limiter,
            bound,
            #[cfg(feature = "http")]
            http,
            config: grants.config.clone(),
        }
    }

    /// What `wasi:config/store` reads: the topic's config, or nothing.
    pub(crate) fn config(&mut self) -> WasiConfig<'_> {
        static NONE: LazyLock<WasiConfigVariables> = LazyLock::new(WasiConfigVariables::new);
        WasiConfig::from(self.config.as_deref().map_or(&*NONE, ConfigGrant::variables))
    }

    /// The job's resource table, without building its WASI context (the
    /// `wasi:io` interfaces need only the table).
    pub(crate) fn table(&mut self) -> &mut ResourceTable {
        &mut self.table
    }

    /// The job's resource table and bound, for the `wasi:io` calls that can
    /// wait (see `waits`).
    pub(crate) fn bounded_io(&mut self) -> BoundedIo<'_> {
        BoundedIo { table: &mut self.table, bound: &self.bound }
    }
}

impl WasiView for JobState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        // Deny-by-default (see the module docs): no preopened directories,
        // no environment, no arguments, stdin closed, no network; stdout and
        // stderr go to the job's log.
        let log = &self.log;
        let ctx = self.wasi.get_or_insert_with(|| {
            WasiCtx::builder()
                .stdout(log.stdout())
                .stderr(log.stderr())
                .allow_tcp(false)
                .allow_udp(false)
                .allow_ip_name_lookup(false)
                .build()
        });
        WasiCtxView { ctx, table: &mut self.table }
    }
}

#[cfg(feature = "http")]
impl WasiHttpView for JobState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        // Linked only for a topic that grants HTTP; were it not, every
        // request would be denied.
        let http = self.http.get_or_insert_with(|| {
            Box::new(JobHttp {
                ctx: WasiHttpCtx::new(),
                hooks: HttpHooks::new(None, "", "", std::time::Instant::now()),
            })
        });
        WasiHttpCtxView { ctx: &mut http.ctx, table: &mut self.table, hooks: &mut http.hooks }
    }
}

/// Who a job is, for its outbound requests: its id and topic (in logs and
/// idempotency keys), and when its deadline passes.
#[cfg_attr(not(feature = "http"), allow(dead_code, reason = "read by outbound HTTP only"))]
pub(crate) struct JobNames<'a> {
    pub(crate) id: &'a str,
    pub(crate) topic: &'a str,
    pub(crate) deadline_at: std::time::Instant,
}

impl types::Host for JobState {}

impl log::Host for JobState {
    fn log(&mut self, level: LogLevel, message: String) {
        self.log.log(level, &message);
    }
}

/// Enforces a job's memory cap and its table and instance limits.
///
/// Growing memory past the cap is not reported to the guest as a failed
/// `memory.grow` (most languages would then abort with a message that looks
/// like any other trap): it traps with [`MemoryLimitExceeded`], which the
/// sandbox turns into `husk.memory-limit`.
pub(crate) struct JobLimiter {
    pub(crate) memory_cap: usize,
    pub(crate) table_elements: usize,
    pub(crate) instances: usize,
    /// The largest memory size the job asked for, in bytes.
    pub(crate) peak_memory: usize,
}

impl ResourceLimiter for JobLimiter {
    fn memory_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        self.peak_memory = self.peak_memory.max(desired);
        if desired > self.memory_cap {
            return Err(wasmtime::Error::new(MemoryLimitExceeded {
                limit: self.memory_cap as u64,
                current: current as u64,
                requested: desired as u64,
            }));
        }
        Ok(maximum.is_none_or(|max| desired <= max))
    }

    fn table_growing(&mut self, _current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        Ok(desired <= self.table_elements && maximum.is_none_or(|max| desired <= max))
    }

    fn instances(&self) -> usize {
        self.instances
    }

    fn tables(&self) -> usize {
        self.instances
    }

    fn memories(&self) -> usize {
        self.instances
    }
}
