//! Enqueue through the real HTTP API, as an operator's clients would: `husk
//! serve` started as a child process (its topic's workers running the jobs
//! meanwhile), 8 client threads, each on its own keep-alive connection:
//!
//! - one job per request, each with an `Idempotency-Key`: jobs/s and the
//!   request latency (p50 / p99);
//! - the batch endpoint, 1,000 jobs per request (keyed too): jobs/s;
//! - one job per request again with the topic paused: what the intake
//!   alone accepts, with no job run meanwhile.
//!
//! On SQLite (one process), then on PostgreSQL with three `husk serve`
//! processes sharing one schema, the clients spread over them.
//!
//! `cargo bench -p husk-cli --bench enqueue [-- JOBS] [sqlite|postgres]`
//! (default 40,000 per run; both stores). PostgreSQL: `$HUSK_TEST_POSTGRES`, else the server `scripts/postgres
//! start` runs; skipped (saying so) without one.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[path = "support/pg.rs"]
mod pg;
#[path = "support/serve.rs"]
mod serve;

use husk_cli::client::Client;
use husk_server::tokens::token_hash;
use pg::{drop_schema, postgres_url};
use serve::start;

const TOKEN: &str = "bench-token";
const CLIENTS: usize = 8;
const BATCH: usize = 1000;

fn config(store: &str, schema: Option<&str>) -> String {
    let schema = schema.map(|s| format!("postgres_schema = \"{s}\"\n")).unwrap_or_default();
    format!(
        r#"store = "{store}"
{schema}max_batch_size = "16MiB"

[tenants.bench]
tokens = ["sha256:{hash}"]

[topics.bench]
tenant = "bench"
plugin = "{plugin}"
fetch_batch = 32
"#,
        hash = token_hash(TOKEN),
        plugin = std::path::Path::new(env!("HUSK_GUEST_DIR")).join("transform.wasm").display(),
    )
}

/// Runs `client` on [`CLIENTS`] threads, each with its own connection to one
/// of `servers` (round robin), all taking work from one counter: each
/// thread's results, and the seconds they took.
fn on_clients<T: Send + 'static>(
    servers: &[String],
    client: impl Fn(&Client, &AtomicUsize) -> T + Send + Sync + 'static,
) -> (Vec<T>, f64) {
    let (next, client) = (Arc::new(AtomicUsize::new(0)), Arc::new(client));
    let started = Instant::now();
    let threads: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let (next, url, work) = (next.clone(), servers[c % servers.len()].clone(), client.clone());
            std::thread::spawn(move || work(&Client::new(&url, Some(TOKEN.to_owned())), &next))
        })
        .collect();
    let results = threads.into_iter().map(|t| t.join().unwrap()).collect();
    (results, started.elapsed().as_secs_f64())
}

/// `jobs` single enqueues from [`CLIENTS`] threads over `servers`:
/// (jobs/s, p50, p99).
fn singles(servers: &[String], jobs: usize, run: &str) -> (f64, Duration, Duration) {
    let run = run.to_owned();
    let (latencies, seconds) = on_clients(servers, move |client, next| {
        let mut latencies = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= jobs {
                return latencies;
            }
            let body = format!(r#"{{"name":"user-{i}","amount":{i}.5}}"#);
            let key = format!("{run}-{i}");
            let sent = Instant::now();
            let answer = client
                .post(
                    "/v1/topics/bench/jobs",
                    Some((body.as_bytes(), "application/json")),
                    &[("Idempotency-Key", &key)],
                )
                .unwrap();
            latencies.push(sent.elapsed());
            assert_eq!(answer["created"], true);
        }
    });
    let mut latencies: Vec<Duration> = latencies.into_iter().flatten().collect();
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    (jobs as f64 / seconds, at(0.50), at(0.99))
}

/// `jobs` enqueued in batches of [`BATCH`] from [`CLIENTS`] threads: jobs/s.
fn batches(servers: &[String], jobs: usize, run: &str) -> f64 {
    let run = run.to_owned();
    let (_, seconds) = on_clients(servers, move |client, next| {
        loop {
            let first = next.fetch_add(BATCH, Ordering::Relaxed);
            if first >= jobs {
                return;
            }
            let items: Vec<String> = (first..(first + BATCH).min(jobs))
                .map(|i| format!(r#"{{"input":{{"name":"user-{i}","amount":{i}.5}},"key":"{run}-{i}"}}"#))
                .collect();
            let body = format!("[{}]", items.join(","));
            let answer =
                client.post("/v1/topics/bench/jobs/batch", Some((body.as_bytes(), "application/json")), &[]).unwrap();
            assert_eq!(answer["created"], items.len());
        }
    });
    jobs as f64 / seconds
}

fn report(label: &str, servers: &[String], jobs: usize) {
    let (rate, p50, p99) = singles(servers, jobs, "single");
    println!(
        "{label}: one job per request, {CLIENTS} connections: {rate:>8.0} jobs/s, p50 {:.2} ms, p99 {:.2} ms",
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3
    );
    let rate = batches(servers, jobs * 5, "batch");
    println!("{label}: batches of {BATCH}, {CLIENTS} connections: {rate:>8.0} jobs/s");
    // The intake alone: the topic paused, so no job runs meanwhile (and
    // its fetchers sleep through the enqueues until a resume).
    let paused = Client::new(&servers[0], Some(TOKEN.to_owned())).post("/v1/topics/bench/pause", None, &[]).unwrap();
    assert_eq!(paused["paused"], true);
    let (rate, p50, p99) = singles(servers, jobs, "paused");
    println!(
        "{label}: one job per request, topic paused (intake alone), {CLIENTS} connections: {rate:>8.0} jobs/s, p50 {:.2} ms, p99 {:.2} ms",
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3
    );
}

fn main() {
    let jobs: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(40_000);
    let only = std::env::args().skip(1).find(|a| a == "sqlite" || a == "postgres");
    let dir = tempfile::tempdir().unwrap();
    if only.as_deref() != Some("postgres") {
        let db = dir.path().join("husk.db");
        let server = start(dir.path(), "sqlite", &config(db.to_str().unwrap(), None));
        report("SQLite, 1 process", std::slice::from_ref(&server.url), jobs);
    }
    if only.as_deref() == Some("sqlite") {
        return;
    }
    let Some(url) = postgres_url() else {
        println!("PostgreSQL: skipped (no $HUSK_TEST_POSTGRES, and scripts/postgres start is not running)");
        return;
    };
    let schema = format!("bench_enqueue_{}", std::process::id());
    let text = config(&url, Some(&schema));
    // The first process creates the schema; the others start after it.
    let mut servers = vec![start(dir.path(), "pg0", &text)];
    servers.extend((1..3).map(|i| start(dir.path(), &format!("pg{i}"), &text)));
    let urls: Vec<String> = servers.iter().map(|s| s.url.clone()).collect();
    report("PostgreSQL, 3 processes", &urls, jobs);
    drop(servers);
    drop_schema(&url, &schema);
}
