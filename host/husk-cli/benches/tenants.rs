//! Noisy neighbour: the throughput of tenant B's transform jobs alone, then
//! next to tenant A's runaway plugin (`spin`, which loops until its
//! deadline kills it) on 4 workers — with A's `max_concurrent` quota at 1,
//! and without a quota for comparison. Memory store, so the figure is the
//! host's own isolation, not a database's.
//!
//! `cargo bench -p husk-cli --bench tenants [-- JOBS]` (default 100,000 B
//! jobs per run, 3 runs per setting; prints jobs/s and the ratio to alone).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use husk::engine::EngineConfig;
use husk::outcome::{OutcomeSink, TerminalOutcome};
use husk::quota::Quota;
use husk::retry::RetryPolicySpec;
use husk::sandbox::Limits;
use husk::{Enqueue, Host, PluginSource, Topic};

/// Counts tenant B's outcomes.
#[derive(Default)]
struct Count(AtomicU64);

impl OutcomeSink for Count {
    fn deliver(&self, outcome: &TerminalOutcome) {
        if outcome.topic == "b" {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn guest(name: &str) -> PluginSource {
    PluginSource::Path(std::path::Path::new(env!("HUSK_GUEST_DIR")).join(format!("{name}.wasm")))
}

/// B's jobs/s with A absent (`noisy: None`) or running `spin` on 4 workers
/// under `noisy`'s quota.
fn run(jobs: u64, noisy: Option<Quota>) -> f64 {
    let count = Arc::new(Count::default());
    let mut builder = Host::builder()
        .engine(EngineConfig::default())
        .sink(count.clone())
        .start_workers(false)
        .topic(Topic::wasm("b", guest("transform")).with_tenant("b").with_workers(1).with_fetch_batch(32));
    if let Some(quota) = noisy {
        let limits = Limits::default().with_deadline(Duration::from_millis(200));
        builder = builder.quota("a", quota).topic(
            Topic::wasm("a", guest("spin"))
                .with_tenant("a")
                .with_workers(4)
                .with_limits(limits)
                .with_retry(RetryPolicySpec::None),
        );
    }
    let host = builder.build().unwrap();
    if noisy.is_some() {
        host.submit(Enqueue::many("a", vec![b"{}".to_vec(); 10_000])).unwrap();
    }
    let input = br#"{"name":"bench","amount":12.5}"#.to_vec();
    host.submit(Enqueue::many("b", vec![input; jobs as usize])).unwrap();
    let started = Instant::now();
    host.start_workers().unwrap();
    while count.0.load(Ordering::Relaxed) < jobs {
        std::thread::sleep(Duration::from_millis(2));
    }
    let rate = jobs as f64 / started.elapsed().as_secs_f64();
    host.shutdown_within(Some(Duration::ZERO));
    rate
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let jobs = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(100_000);
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!("{jobs} transform jobs of tenant B (1 worker), {cores} cores; 3 runs each, median");
    let settings = [
        ("B alone", None),
        (
            "B next to A: spin x 4 workers, max_concurrent = 1",
            Some(Quota::default().with_max_concurrent(Some(1)).with_max_queued(None)),
        ),
        ("B next to A: spin x 4 workers, no quota", Some(Quota::default())),
    ];
    let mut alone = 0.0;
    for (label, noisy) in settings {
        let runs: Vec<f64> = (0..3).map(|_| run(jobs, noisy)).collect();
        let rate = median(runs.clone());
        if noisy.is_none() {
            alone = rate;
        }
        let runs: Vec<String> = runs.iter().map(|r| format!("{r:.0}")).collect();
        println!("{label:<55} {rate:>9.0} jobs/s  ({:>5.1}% of alone; runs {})", 100.0 * rate / alone, runs.join(", "));
    }
}
