//! Outbound HTTP: the cost of one GET to a service on 127.0.0.1 from a Wasm
//! job (the `fetch` example, through wasi:http and husk's allowlist,
//! idempotency key and caps) against the same GET from native Rust (ureq),
//! each timed one by one; then jobs/s of a topic of such jobs through the
//! whole pipeline (memory store, 2 workers).
//!
//! `cargo bench -p husk-cli --bench outbound [-- JOBS]` (default 5,000).
//! Each request opens its own connection in both cases: husk does not pool
//! connections across jobs (a job's instance, and with it every
//! connection it opened, is dropped at its end).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use husk::capability::{AllowedHost, Grants, HttpGrant};
use husk::engine::{Engine, EngineConfig};
use husk::outcome::{Outcome, OutcomeSink, TerminalOutcome};
use husk::plugin::World;
use husk::sandbox::{Ending, Job, Limits, Sandbox};
use husk::{Enqueue, Host, PluginSource, Topic};
use husk_cli::demo_service::Service;

fn fetch_path() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("HUSK_GUEST_DIR")).join("fetch.wasm")
}

fn percentiles(label: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)].as_secs_f64() * 1e6;
    println!(
        "{label}: p50 {:.0} µs, p90 {:.0} µs, p99 {:.0} µs ({} requests)",
        at(0.5),
        at(0.9),
        at(0.99),
        samples.len()
    );
}

fn timed(n: usize, mut f: impl FnMut()) -> Vec<Duration> {
    for _ in 0..n / 10 {
        f();
    }
    (0..n)
        .map(|_| {
            let started = Instant::now();
            f();
            started.elapsed()
        })
        .collect()
}

#[derive(Default)]
struct Count(AtomicU64, AtomicU64);

impl OutcomeSink for Count {
    fn deliver(&self, outcome: &TerminalOutcome) {
        match outcome.outcome {
            Outcome::Completed { .. } => self.0.fetch_add(1, Ordering::Relaxed),
            _ => self.1.fetch_add(1, Ordering::Relaxed),
        };
    }
}

fn main() {
    let jobs: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(5_000);
    let service = Service::start().unwrap();
    let url = format!("{}/charge/1", service.origin());
    let grants = Grants::default()
        .with_http(HttpGrant::default().with_allowed(vec![AllowedHost::parse(&service.origin()).unwrap()]));

    let sandbox = Sandbox::new(Engine::new(EngineConfig::default()).unwrap()).unwrap();
    let bytes = std::fs::read(fetch_path()).unwrap();
    let plugin = sandbox.load_granted(&bytes, World::Operation, "fetch.wasm", &grants).unwrap();
    let job = Job {
        id: "bench".into(),
        topic: "bench".into(),
        attempt: 1,
        input: format!(r#"{{"url":"{url}"}}"#).into_bytes(),
    };
    let limits = Limits::default();
    let wasm = timed(jobs, || {
        let execution = sandbox.execute_granted(&plugin, &job, &limits, &grants, None).unwrap();
        assert!(matches!(execution.ending, Ending::Returned(_)), "{:?}", execution.ending);
    });
    let native = timed(jobs, || {
        let agent = ureq::Agent::new_with_defaults();
        let body = agent
            .get(&url)
            .header("idempotency-key", "husk-bench-1")
            .call()
            .unwrap()
            .body_mut()
            .read_to_string()
            .unwrap();
        assert_eq!(body, "charged 1");
    });
    percentiles("one GET from a Wasm job (instantiate + execute + request)", wasm);
    percentiles("the same GET from native Rust (ureq, a new connection)", native);

    let count = Arc::new(Count::default());
    let topic =
        Topic::wasm("calls", PluginSource::Path(fetch_path())).with_workers(2).with_fetch_batch(8).with_grants(grants);
    let host = Host::builder().sink(count.clone()).topic(topic).build().unwrap();
    let input = format!(r#"{{"url":"{url}"}}"#).into_bytes();
    let started = Instant::now();
    host.submit(Enqueue::many("calls", (0..jobs).map(|_| input.clone()))).unwrap();
    while count.0.load(Ordering::Relaxed) + count.1.load(Ordering::Relaxed) < jobs as u64 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let elapsed = started.elapsed();
    host.shutdown();
    println!(
        "HTTP jobs through the pipeline: {jobs} jobs in {:.2} s, {:.0} jobs/s (2 workers, memory store; {} not completed)",
        elapsed.as_secs_f64(),
        jobs as f64 / elapsed.as_secs_f64(),
        count.1.load(Ordering::Relaxed)
    );
}
