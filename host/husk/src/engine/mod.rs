//! The wasmtime engine husk runs every job on: pooling allocator, epoch
//! interruption with a ticker thread, optional fuel, and an on-disk cache of
//! compiled components.

mod cache;
mod ticker;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use wasmtime::component::Component;
use wasmtime::{InstanceAllocationStrategy, PoolingAllocationConfig};

pub use cache::{CacheError, CompileCache, Compiled, content_digest};
use ticker::Ticker;

/// Default interval between epoch ticks: the granularity of deadlines.
pub const DEFAULT_EPOCH_TICK: Duration = Duration::from_millis(10);

/// How an [`Engine`] is built. `EngineConfig::default()` gives:
///
/// - `epoch_tick`: `Some(10ms)` — a ticker thread advances the epoch every
///   10 ms; `None` means no ticker, and the embedder (or a test) calls
///   [`Engine::increment_epoch`] itself;
/// - `fuel`: `false` — fuel metering off (turn it on when any topic asks
///   for a fuel budget; it costs a few percent of guest speed);
/// - `max_instances`: 1,000 concurrent component instances in the pool;
/// - `max_memory`: 256 MiB — the largest linear memory any job may get (a
///   job's own cap, its `Limits::memory`, is usually smaller);
/// - `max_wasm_stack`: 512 KiB of native stack for WebAssembly frames;
/// - `memory_keep_resident`: 128 KiB — the low bytes of each linear memory
///   that are reset with `memset` and stay resident between jobs, instead of
///   being returned to the kernel and faulted in again (see
///   `docs/performance.md`);
/// - `pagemap_scan`: `true` — reset only the pages a job dirtied, up to
///   `memory_keep_resident`, found with the `PAGEMAP_SCAN` ioctl where the
///   kernel has it (Linux 6.7+; elsewhere the whole kept-resident range is
///   reset with `memset`): a job that touches a few pages resets a few
///   (`sandbox` bench: p50 6.9 µs per job with it, 10.8 µs without);
/// - `cache_dir`: `None` — no on-disk compile cache.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct EngineConfig {
    /// Interval of the epoch ticker thread; `None` for manual ticking.
    pub epoch_tick: Option<Duration>,
    /// Whether fuel metering is compiled in.
    pub fuel: bool,
    /// Instances the pooling allocator holds (the most jobs running at once).
    pub max_instances: u32,
    /// Largest linear memory, in bytes, any instance may have.
    pub max_memory: u64,
    /// Native stack available to WebAssembly, in bytes.
    pub max_wasm_stack: usize,
    /// Bytes at the start of each linear memory kept resident between jobs.
    pub memory_keep_resident: usize,
    /// Whether to find dirty pages with `PAGEMAP_SCAN` when resetting memory
    /// (where the kernel supports it).
    pub pagemap_scan: bool,
    /// Directory of the compile cache; `None` disables it.
    pub cache_dir: Option<PathBuf>,
}

impl EngineConfig {
    /// Sets `epoch_tick` (see the field).
    #[must_use]
    pub fn with_epoch_tick(mut self, epoch_tick: Option<Duration>) -> Self {
        self.epoch_tick = epoch_tick;
        self
    }

    /// Sets `fuel` (see the field).
    #[must_use]
    pub fn with_fuel(mut self, fuel: bool) -> Self {
        self.fuel = fuel;
        self
    }

    /// Sets `max_instances` (see the field).
    #[must_use]
    pub fn with_max_instances(mut self, max_instances: u32) -> Self {
        self.max_instances = max_instances;
        self
    }

    /// Sets `max_memory` (see the field).
    #[must_use]
    pub fn with_max_memory(mut self, max_memory: u64) -> Self {
        self.max_memory = max_memory;
        self
    }

    /// Sets `max_wasm_stack` (see the field).
    #[must_use]
    pub fn with_max_wasm_stack(mut self, max_wasm_stack: usize) -> Self {
        self.max_wasm_stack = max_wasm_stack;
        self
    }

    /// Sets `memory_keep_resident` (see the field).
    #[must_use]
    pub fn with_memory_keep_resident(mut self, memory_keep_resident: usize) -> Self {
        self.memory_keep_resident = memory_keep_resident;
        self
    }

    /// Sets `pagemap_scan` (see the field).
    #[must_use]
    pub fn with_pagemap_scan(mut self, pagemap_scan: bool) -> Self {
        self.pagemap_scan = pagemap_scan;
        self
    }

    /// Sets `cache_dir` (see the field).
    #[must_use]
    pub fn with_cache_dir(mut self, cache_dir: Option<PathBuf>) -> Self {
        self.cache_dir = cache_dir;
        self
    }
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            epoch_tick: Some(DEFAULT_EPOCH_TICK),
            fuel: false,
            max_instances: 1_000,
            max_memory: 256 << 20,
            max_wasm_stack: 512 << 10,
            memory_keep_resident: 128 << 10,
            pagemap_scan: true,
            cache_dir: None,
        }
    }
}

/// Errors building an [`Engine`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// wasmtime refused the configuration.
    #[error("invalid engine configuration: {0:#}")]
    Config(wasmtime::Error),
    /// The compile cache directory could not be created.
    #[error(transparent)]
    Cache(CacheError),
}

/// Where a loaded component's machine code came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CodeSource {
    /// Compiled from WebAssembly now (and stored in the cache, if any).
    Compiled,
    /// Read from the compile cache.
    Cache,
    /// Read from a file precompiled by `husk compile`.
    Precompiled,
}

/// husk's engine: one per process, shared by every plugin and job. Cheap to
/// clone. Dropping the last clone stops the ticker thread.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    wasmtime: wasmtime::Engine,
    config: EngineConfig,
    epoch: Arc<Epoch>,
    cache: Option<CompileCache>,
    _ticker: Option<Ticker>,
}

/// The engine's epoch: wasmtime's counter, a mirror of it that can be read
/// (wasmtime does not expose the current epoch), and a channel that wakes
/// whoever waits for the next tick — a job blocked in a host call, which
/// the epoch deadline inside WebAssembly cannot reach.
struct Epoch {
    wasmtime: wasmtime::Engine,
    count: AtomicU64,
    ticks: tokio::sync::watch::Sender<u64>,
}

impl Epoch {
    fn increment(&self) {
        // The mirror first: a job that wakes on the engine's tick must see it.
        let now = self.count.fetch_add(1, Ordering::AcqRel) + 1;
        self.wasmtime.increment_epoch();
        self.ticks.send_replace(now);
    }
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("config", &self.inner.config).finish_non_exhaustive()
    }
}

impl Engine {
    /// Builds an engine and starts its epoch ticker.
    ///
    /// # Errors
    ///
    /// [`EngineError`] when wasmtime refuses the configuration (e.g. the
    /// pool cannot reserve its address space) or the cache directory cannot
    /// be created.
    pub fn new(config: EngineConfig) -> Result<Self, EngineError> {
        let wasmtime = wasmtime::Engine::new(&wasmtime_config(&config)).map_err(EngineError::Config)?;
        let cache = match &config.cache_dir {
            Some(dir) => match CompileCache::open(dir, &wasmtime) {
                Ok(cache) => Some(cache),
                Err(error @ CacheError::NotPrivate { .. }) => {
                    // Not an error to stop for: husk runs as well without a
                    // cache, compiling each component itself.
                    tracing::warn!(%error, "running without the compile cache");
                    None
                }
                Err(error) => return Err(EngineError::Cache(error)),
            },
            None => None,
        };
        let epoch = Arc::new(Epoch {
            wasmtime: wasmtime.clone(),
            count: AtomicU64::new(0),
            ticks: tokio::sync::watch::Sender::new(0),
        });
        let ticker = config.epoch_tick.map(|tick| Ticker::start(epoch.clone(), tick));
        Ok(Self { inner: Arc::new(Inner { wasmtime, config, epoch, cache, _ticker: ticker }) })
    }

    /// The wasmtime engine.
    pub fn wasmtime(&self) -> &wasmtime::Engine {
        &self.inner.wasmtime
    }

    /// The configuration this engine was built with.
    pub fn config(&self) -> &EngineConfig {
        &self.inner.config
    }

    /// The compile cache, if the engine has one.
    pub fn cache(&self) -> Option<&CompileCache> {
        self.inner.cache.as_ref()
    }

    /// Ticks the epoch by hand: every running job sees one more tick toward
    /// its deadline. The ticker thread calls this; tests with a manual
    /// engine (`epoch_tick: None`) call it to drive deadlines.
    pub fn increment_epoch(&self) {
        self.inner.epoch.increment();
    }

    /// The number of epoch ticks since the engine started.
    pub fn epoch(&self) -> u64 {
        self.inner.epoch.count.load(Ordering::Acquire)
    }

    /// A receiver that wakes at every epoch tick (with the new count): how a
    /// job blocked in a host call learns that its deadline passed or that it
    /// was cancelled.
    pub fn epoch_ticks(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.epoch.ticks.subscribe()
    }

    /// Turns a deadline into whole epoch ticks (at least one). With manual
    /// ticking, one tick is taken to be [`DEFAULT_EPOCH_TICK`].
    pub fn ticks_for(&self, deadline: Duration) -> u64 {
        let tick = self.inner.config.epoch_tick.unwrap_or(DEFAULT_EPOCH_TICK);
        (deadline.as_nanos().div_ceil(tick.as_nanos().max(1)) as u64).max(1)
    }

    /// Compiles a component from WebAssembly bytes, through the compile
    /// cache when there is one. A fresh compilation enters the cache only
    /// when kept ([`Compiled::keep`]), once the caller found it usable.
    ///
    /// # Errors
    ///
    /// When the bytes are not a valid component for this engine.
    pub fn compile(&self, wasm: &[u8]) -> wasmtime::Result<Compiled> {
        match &self.inner.cache {
            Some(cache) => cache.load_or_compile(&self.inner.wasmtime, wasm),
            None => Ok(Compiled::new(Component::new(&self.inner.wasmtime, wasm)?)),
        }
    }

    /// Compiles a component ahead of time with Cranelift; the result can be
    /// loaded by [`Engine::load_precompiled`] on a compatible engine.
    ///
    /// # Errors
    ///
    /// When the bytes are not a valid component.
    pub fn precompile(&self, wasm: &[u8]) -> wasmtime::Result<Vec<u8>> {
        self.inner.wasmtime.precompile_component(wasm)
    }

    /// Whether `bytes` are a component precompiled for a wasmtime engine
    /// (not necessarily a compatible one).
    pub fn is_precompiled_component(bytes: &[u8]) -> bool {
        matches!(wasmtime::Engine::detect_precompiled(bytes), Some(wasmtime::Precompiled::Component))
    }

    /// Loads a component precompiled by `husk compile`.
    ///
    /// # Errors
    ///
    /// When the bytes are not a precompiled component or were compiled by an
    /// incompatible engine.
    ///
    /// # Safety
    ///
    /// The bytes are machine code that will run in this process, with all of
    /// husk's rights: wasmtime checks their header and that a compatible
    /// engine made them, and nothing else. The caller must know that they
    /// are the unmodified output of [`Engine::precompile`] (`husk compile`),
    /// read from a file only the operator can write — never bytes a tenant
    /// or an API caller supplied, and never a file they can write.
    #[allow(unsafe_code)]
    pub unsafe fn load_precompiled(&self, bytes: &[u8]) -> wasmtime::Result<Component> {
        // SAFETY: this function's own contract, passed on to its caller.
        unsafe { Component::deserialize(&self.inner.wasmtime, bytes) }
    }
}

/// Core instances (and tables) the pool reserves per component instance, on
/// average. Instantiated core modules per component: Rust and C examples
/// 2–3, JavaScript (componentize-js 0.23) 3, Python (componentize-py 0.25)
/// 14, and wasmtime counts a few more at run time (a Python job failed in a
/// store limited to 16). One component may have up to 64.
const CORE_INSTANCES_PER_COMPONENT: u32 = 24;

fn wasmtime_config(config: &EngineConfig) -> wasmtime::Config {
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(config.max_instances)
        .total_core_instances(config.max_instances.saturating_mul(CORE_INSTANCES_PER_COMPONENT))
        .total_memories(config.max_instances.saturating_mul(2))
        .total_tables(config.max_instances.saturating_mul(CORE_INSTANCES_PER_COMPONENT))
        .total_stacks(0)
        .max_memory_size(config.max_memory as usize)
        .max_core_instances_per_component(64)
        .max_memories_per_component(4)
        .max_tables_per_component(64)
        // Return guest memory to the kernel in batches of 64 slots, and
        // reset the low pages of each memory with memset instead of madvise:
        // a job that touches only those pages then takes no page faults.
        .decommit_batch_size(64)
        .linear_memory_keep_resident(config.memory_keep_resident)
        .table_keep_resident(16 << 10)
        .pagemap_scan(if config.pagemap_scan { wasmtime::Enabled::Auto } else { wasmtime::Enabled::No });

    let mut wasmtime = wasmtime::Config::new();
    wasmtime
        .epoch_interruption(true)
        .consume_fuel(config.fuel)
        .max_wasm_stack(config.max_wasm_stack)
        .memory_init_cow(true)
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    wasmtime
}
