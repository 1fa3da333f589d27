//! End-to-end throughput: N jobs of the trivial JSON transform through
//! dispatcher + worker pool + sandbox on the in-memory store, and the same
//! pipeline with a native Rust handler in place of the sandbox; then the
//! Wasm pipeline on the SQLite store.
//!
//! `cargo bench -p husk-host --bench pipeline [-- JOBS]` (default 200,000).
//! Prints jobs/s for each; not a criterion bench, since one run is already
//! hundreds of thousands of jobs.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use husk_host::dispatch::JobResult;
use husk_host::engine::EngineConfig;
use husk_host::outcome::{Outcome, OutcomeSink, TerminalOutcome};
use husk_host::sandbox::CancelToken;
use husk_host::store::{Durability, JobStore, LockedJob, MemoryStore, SqliteStore};
use husk_host::worker::{Handled, Handler};
use husk_host::{Host, PluginSource, Topic};
use serde::{Deserialize, Serialize};

/// Counts completed outcomes and wakes the bench when all arrived.
#[derive(Default)]
struct Counter {
    completed: AtomicU64,
    other: AtomicU64,
    done: Mutex<bool>,
    all: Condvar,
    target: AtomicU64,
}

impl OutcomeSink for Counter {
    fn deliver(&self, outcome: &TerminalOutcome) {
        let counter = if matches!(outcome.outcome, Outcome::Completed { .. }) { &self.completed } else { &self.other };
        let n = counter.fetch_add(1, Ordering::Relaxed) + 1;
        if n + self.other.load(Ordering::Relaxed) >= self.target.load(Ordering::Relaxed) {
            *self.done.lock().unwrap() = true;
            self.all.notify_all();
        }
    }
}

#[derive(Deserialize)]
struct Input {
    name: String,
    #[serde(default)]
    amount: f64,
}

#[derive(Serialize)]
struct Greeting {
    greeting: String,
    amount_cents: i64,
}

/// The `transform` example, natively.
struct NativeTransform;

impl Handler for NativeTransform {
    fn handle(&self, job: &LockedJob, _cancel: &CancelToken) -> Handled {
        let input: Input = serde_json::from_slice(&job.input).unwrap();
        let output = serde_json::to_vec(&Greeting {
            greeting: format!("hello, {}", input.name),
            amount_cents: (input.amount * 100.0).round() as i64,
        })
        .unwrap();
        Handled { result: JobResult::Output(output), plugin_version: None, killed: None }
    }
}

fn measure(label: &str, topic: Topic, store: Arc<dyn JobStore>, jobs: usize) -> f64 {
    let counter = Arc::new(Counter::default());
    counter.target.store(jobs as u64, Ordering::Relaxed);
    let host = Host::builder()
        .store(store)
        .engine(EngineConfig::default())
        .sink(counter.clone())
        .topic(topic.with_workers(2).with_fetch_batch(32))
        .start_workers(false)
        .build()
        .unwrap();
    let inputs: Vec<Vec<u8>> =
        (0..jobs).map(|i| format!(r#"{{"name":"user-{i}","amount":{i}.5}}"#).into_bytes()).collect();
    host.dispatcher().enqueue_many("bench", inputs, None).unwrap();
    let started = Instant::now();
    host.start_workers().unwrap();
    let done = counter.done.lock().unwrap();
    let (done, timeout) = counter.all.wait_timeout_while(done, Duration::from_secs(600), |d| !*d).unwrap();
    let elapsed = started.elapsed();
    drop(done);
    assert!(!timeout.timed_out(), "{label}: timed out");
    assert_eq!(counter.completed.load(Ordering::Relaxed), jobs as u64, "{label}: every job completed");
    host.shutdown();
    let rate = jobs as f64 / elapsed.as_secs_f64();
    println!("{label}: {jobs} jobs in {:.2} s = {rate:.0} jobs/s", elapsed.as_secs_f64());
    rate
}

fn main() {
    let jobs = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(200_000);
    let transform = PluginSource::Path(std::path::PathBuf::from(env!("HUSK_GUEST_DIR")).join("transform.wasm"));
    let memory = || Arc::new(MemoryStore::new()) as Arc<dyn JobStore>;
    let native =
        measure("native handler, memory store", Topic::native("bench", Arc::new(NativeTransform)), memory(), jobs);
    let wasm = measure("wasm transform, memory store", Topic::wasm("bench", transform.clone()), memory(), jobs);
    println!("wasm / native = {:.2}", wasm / native);
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Arc::new(SqliteStore::open(&dir.path().join("bench.db"), Durability::Normal).unwrap());
    measure("wasm transform, SQLite store (synchronous=NORMAL)", Topic::wasm("bench", transform), sqlite, jobs);
}
