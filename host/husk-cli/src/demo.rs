//! `husk demo`: 10,000 jobs across the example plugins, with a progress bar
//! and a summary. Needs no configuration: the example components are built
//! into the `husk` binary. The `calls` topic's jobs call a small HTTP
//! service the demo starts on 127.0.0.1 (see `demo_service`), the only host
//! the topic allows.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use husk::Enqueue;
use husk::capability::{AllowedHost, Grants, HttpGrant};
use husk::dispatch::Totals;
use husk::engine::EngineConfig;
use husk::fault::codes;
use husk::host::{Host, MapperSpec, PluginSource, Topic};
use husk::outcome::{OutcomeSink, TerminalOutcome};
use husk::retry::RetryPolicySpec;
use husk::sandbox::Limits;
use husk::store::JobStore;

macro_rules! example {
    ($name:literal) => {
        PluginSource::Bytes {
            bytes: include_bytes!(concat!(env!("HUSK_GUEST_DIR"), "/", $name, ".wasm")).to_vec(),
            name: concat!($name, ".wasm").to_owned(),
        }
    };
}

/// Jobs per topic: transform, flaky, payments, runaway, calls.
const TRANSFORM: usize = 6_800;
const FLAKY: usize = 1_500;
const PAYMENTS: usize = 1_480;
const RUNAWAY: usize = 20;
const CALLS: usize = 200;
/// All the demo's jobs.
pub const DEMO_JOBS: usize = TRANSFORM + FLAKY + PAYMENTS + RUNAWAY + CALLS;

/// Counts outcomes and keeps each job's latency (enqueue to terminal).
struct DemoSink {
    delivered: AtomicU64,
    latencies: parking_lot::Mutex<Vec<Duration>>,
}

impl OutcomeSink for DemoSink {
    fn deliver(&self, outcome: &TerminalOutcome) {
        let latency = outcome.finished_at.duration_since(outcome.enqueued_at).unwrap_or_default();
        self.latencies.lock().push(latency);
        self.delivered.fetch_add(1, Ordering::Relaxed);
    }
}

/// What the demo measured.
#[derive(Debug, Clone)]
pub struct DemoReport {
    /// The dispatcher's totals.
    pub totals: Totals,
    /// Wall time from the first enqueue to the last outcome.
    pub elapsed: Duration,
    /// Median job latency, enqueue to terminal outcome.
    pub p50: Duration,
    /// 99th percentile job latency.
    pub p99: Duration,
    /// The store the jobs lived in.
    pub store: String,
    /// What the `calls` topic's service saw.
    pub calls: CallsReport,
}

/// What the demo's HTTP service saw of the `calls` topic's jobs.
#[derive(Debug, Clone, Copy, Default)]
pub struct CallsReport {
    /// Requests it received.
    pub requests: u64,
    /// Requests it answered 503.
    pub failed: u64,
    /// Requests it left hanging (their jobs killed at the deadline).
    pub hung: u64,
    /// Jobs it saw more than once (retried).
    pub retried: usize,
    /// Of those, the jobs whose every call carried the same idempotency key.
    pub same_key: usize,
}

/// Runs the demo; `progress` shows a progress bar on the terminal.
///
/// # Errors
///
/// When the host cannot be built or a job cannot be enqueued.
pub fn run(
    cache_dir: Option<std::path::PathBuf>,
    progress: bool,
    store: Arc<dyn JobStore>,
    store_name: String,
) -> anyhow::Result<DemoReport> {
    let sink = Arc::new(DemoSink { delivered: AtomicU64::new(0), latencies: Default::default() });
    let quick_retry = RetryPolicySpec::Exponential {
        max_attempts: 3,
        base: Duration::from_millis(20),
        max: Duration::from_millis(200),
        jitter: true,
    };
    let service = crate::demo_service::Service::start()?;
    let allowed = AllowedHost::parse(&service.origin())?;
    let calls = Topic::wasm("calls", example!("fetch"))
        .with_limits(Limits::default().with_deadline(Duration::from_millis(250)))
        .with_grants(Grants::default().with_http(HttpGrant::default().with_allowed(vec![allowed])));
    let host = Host::builder()
        .store(store)
        .engine(EngineConfig::default().with_cache_dir(cache_dir))
        .sink(sink.clone())
        .default_retry(quick_retry)
        .topic(Topic::wasm("transform", example!("transform")).with_fetch_batch(8))
        .topic(Topic::wasm("flaky", example!("flaky")))
        .topic(Topic::wasm("payments", example!("business")).with_mapper(MapperSpec::Plugin(example!("mapper"))))
        .topic(
            Topic::wasm("runaway", example!("spin"))
                .with_limits(Limits::default().with_deadline(Duration::from_millis(100)))
                .with_retry(RetryPolicySpec::None),
        )
        .topic(calls)
        .build()?;

    let bar = if progress { ProgressBar::new(DEMO_JOBS as u64) } else { ProgressBar::hidden() };
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} jobs ({per_sec})")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let started = Instant::now();
    let inputs = |n: usize, f: &dyn Fn(usize) -> serde_json::Value| -> Vec<Vec<u8>> {
        (0..n).map(|i| f(i).to_string().into_bytes()).collect()
    };
    host.submit(Enqueue::many("runaway", inputs(RUNAWAY, &|_| json!({}))))?;
    host.submit(Enqueue::many("flaky", inputs(FLAKY, &|i| json!({ "succeed_on_attempt": 1 + (i % 4) }))))?;
    host.submit(Enqueue::many(
        "payments",
        inputs(PAYMENTS, &|i| match i % 4 {
            0 | 1 => json!({ "account": format!("acct-{i}"), "amount": 40, "balance": 100 }),
            2 => json!({ "account": format!("acct-{i}"), "amount": 400, "balance": 100 }),
            _ => json!({ "account": "frozen", "amount": 1, "balance": 100 }),
        }),
    ))?;
    let origin = service.origin();
    host.submit(Enqueue::many("calls", inputs(CALLS, &|i| json!({ "url": format!("{origin}/charge/{i}") }))))?;
    host.submit(Enqueue::many(
        "transform",
        inputs(TRANSFORM, &|i| json!({ "name": format!("user-{i}"), "amount": i as f64 / 100.0 })),
    ))?;

    let limit = started + Duration::from_secs(300);
    while sink.delivered.load(Ordering::Relaxed) < DEMO_JOBS as u64 {
        if Instant::now() > limit {
            anyhow::bail!("the demo did not finish in 5 minutes");
        }
        bar.set_position(sink.delivered.load(Ordering::Relaxed));
        std::thread::sleep(Duration::from_millis(50));
    }
    let elapsed = started.elapsed();
    bar.finish_and_clear();
    host.shutdown();

    let mut latencies = sink.latencies.lock().clone();
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    let seen = service.calls();
    let (retried, same_key) = seen.retried_with_same_key();
    let requests = seen.keys.values().map(|keys| keys.len() as u64).sum();
    let calls = CallsReport { requests, failed: seen.failed, hung: seen.hung, retried, same_key };
    Ok(DemoReport { totals: host.totals(), elapsed, p50: at(0.5), p99: at(0.99), store: store_name, calls })
}

impl DemoReport {
    /// The summary table.
    pub fn table(&self) -> String {
        let t = &self.totals;
        let kills = |code: &str| t.kills.get(code).copied().unwrap_or(0);
        let rows = [
            ("jobs", t.ended().to_string()),
            ("completed", t.completed.to_string()),
            ("business errors", t.business_errors.to_string()),
            ("business statuses", t.business_statuses.to_string()),
            ("incidents (failed)", t.failed.to_string()),
            ("retries taken", t.retries.to_string()),
            ("killed at deadline", kills(codes::TIMEOUT).to_string()),
            ("service calls", self.calls.requests.to_string()),
            ("  answered 503", self.calls.failed.to_string()),
            ("  hung, killed", self.calls.hung.to_string()),
            ("  jobs retried", self.calls.retried.to_string()),
            ("  same key each try", format!("{}/{}", self.calls.same_key, self.calls.retried)),
            ("jobs/s", format!("{:.0}", t.ended() as f64 / self.elapsed.as_secs_f64())),
            ("p50 latency", format!("{:.1} ms", self.p50.as_secs_f64() * 1e3)),
            ("p99 latency", format!("{:.1} ms", self.p99.as_secs_f64() * 1e3)),
            ("elapsed", format!("{:.2} s", self.elapsed.as_secs_f64())),
        ];
        let mut out = String::from(
            "husk demo — 10,000 jobs across transform, flaky, payments (+ mapper), runaway, calls (HTTP)\n\n",
        );
        for (name, value) in rows {
            out.push_str(&format!("  {name:<20} {value:>12}\n"));
        }
        out.push_str(&format!("\n  store: {}\n", self.store));
        out
    }
}
