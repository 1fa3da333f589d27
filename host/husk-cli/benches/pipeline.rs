//! End-to-end throughput: N jobs of the trivial JSON transform through
//! dispatcher + worker pool + sandbox on the in-memory store, and the same
//! pipeline with a native Rust handler in place of the sandbox; then the
//! Wasm pipeline on SQLite and on PostgreSQL (one process, then two
//! processes sharing the database); then the latency a job sees, enqueue to
//! terminal outcome, at a steady 1,000 jobs/s, with fetch batches of 1 and
//! 32.
//!
//! `cargo bench -p husk-cli --bench pipeline [-- JOBS]` (default 200,000);
//! `-- --latency`: only the latency runs, on PostgreSQL; `-- postgres`: only
//! the PostgreSQL throughput runs; `-- sqlite`: only the SQLite runs
//! (throughput, then latency); `-- --gate JOBS`: the cost of the
//! cluster-wide concurrency gate; `-- --inputs JOBS`: the cost of keeping
//! inputs with outcomes; `-- --priority JOBS`: jobs run past a backlog of
//! 100,000 waiting at a lower priority. `$HUSK_BENCH_NATIVE` set: the PostgreSQL
//! throughput runs use the native handler (the store's path alone).
//! PostgreSQL: `$HUSK_TEST_POSTGRES`, else the server `scripts/postgres
//! start` runs; skipped (saying so) without one. Prints jobs/s for each; not
//! a criterion bench, since one run is already hundreds of thousands of
//! jobs.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

#[path = "support/pg.rs"]
mod pg;

use husk::engine::EngineConfig;
use husk::outcome::{Outcome, OutcomeSink, TerminalOutcome};
use husk::quota::Quota;
use husk::sandbox::CancelToken;
use husk::sandbox::Ending;
use husk::store::{JobStore, LockedJob, MemoryStore};
use husk::worker::{Handled, Handler};
use husk::{Enqueue, EnqueueJob, Host, PluginSource, Topic};
use husk_postgres::{PostgresConfig, PostgresStore};
use husk_sqlite::{Durability, SqliteStore};
use pg::{drop_schema, postgres_url};
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
        Handled::new(Ending::Returned(output))
    }
}

fn measure(label: &str, topic: Topic, store: Arc<dyn JobStore>, jobs: usize) -> f64 {
    measure_gated(label, topic, store, jobs, None)
}

/// [`measure`], the topic's tenant limited to `max_concurrent` jobs at once
/// (on PostgreSQL, permits leased from the store: the cluster-wide gate).
fn measure_gated(
    label: &str,
    topic: Topic,
    store: Arc<dyn JobStore>,
    jobs: usize,
    max_concurrent: Option<usize>,
) -> f64 {
    run_measured(label, topic, store, inputs(jobs), max_concurrent)
}

/// Enqueues `inputs`, then times the workers running them all.
fn run_measured(
    label: &str,
    topic: Topic,
    store: Arc<dyn JobStore>,
    inputs: Vec<Vec<u8>>,
    max_concurrent: Option<usize>,
) -> f64 {
    let jobs = inputs.len();
    let counter = Arc::new(Counter::default());
    counter.target.store(jobs as u64, Ordering::Relaxed);
    let mut builder = Host::builder()
        .store(store)
        .engine(EngineConfig::default())
        .sink(counter.clone())
        .topic(topic.with_workers(2).with_fetch_batch(batch()).with_tenant("bench-tenant"))
        .start_workers(false);
    if let Some(max) = max_concurrent {
        builder = builder.quota("bench-tenant", Quota::default().with_max_concurrent(Some(max)));
    }
    let host = builder.build().unwrap();
    host.submit(Enqueue::many("bench", inputs)).unwrap();
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

/// Jobs claimed per fetch in the throughput runs: `$HUSK_BENCH_BATCH`, else 32.
fn batch() -> usize {
    std::env::var("HUSK_BENCH_BATCH").ok().and_then(|b| b.parse().ok()).unwrap_or(32)
}

/// Whether the PostgreSQL throughput runs use the native handler
/// (`$HUSK_BENCH_NATIVE` set): the store's path alone, without the sandbox.
fn native() -> bool {
    std::env::var_os("HUSK_BENCH_NATIVE").is_some()
}

/// The topic of the PostgreSQL throughput runs: `transform` in the sandbox,
/// or natively (see [`native`]).
fn bench_topic() -> Topic {
    if native() { Topic::native("bench", Arc::new(NativeTransform)) } else { Topic::wasm("bench", transform()) }
}

/// How the PostgreSQL throughput runs' jobs run, for their labels.
fn runs_as() -> &'static str {
    if native() { "native transform" } else { "wasm transform" }
}

fn transform() -> PluginSource {
    PluginSource::Path(std::path::PathBuf::from(env!("HUSK_GUEST_DIR")).join("transform.wasm"))
}

fn inputs(jobs: usize) -> Vec<Vec<u8>> {
    (0..jobs).map(|i| format!(r#"{{"name":"user-{i}","amount":{i}.5}}"#).into_bytes()).collect()
}

fn postgres(url: &str, schema: &str) -> Arc<dyn JobStore> {
    let config = PostgresConfig { schema: Some(schema.to_owned()), ..PostgresConfig::new(url) };
    Arc::new(PostgresStore::open(&config).unwrap())
}

/// One of the processes of the two-process run: builds its host, says
/// `ready`, starts its workers on `go`, and exits when no job is left.
fn pg_worker(url: &str, schema: &str) {
    let store = postgres(url, schema);
    let host = Host::builder()
        .store(store.clone())
        .topic(bench_topic().with_workers(2).with_fetch_batch(batch()))
        .start_workers(false)
        .build()
        .unwrap();
    println!("ready");
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    host.start_workers().unwrap();
    // Done when no job is left: a cheap query (depths() counts every job).
    // One probe per state, each on that state's partial index: a scan of
    // the table itself reads from its start, past every ended job's dead
    // row (148 ms of the server's time in a 3 s run of 100,000 jobs, where
    // these probes take 56 ms).
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let left =
        [0, 1, 2].map(|state| format!("EXISTS (SELECT 1 FROM {schema}.husk_jobs WHERE state = {state})")).join(" OR ");
    let left = format!("SELECT {left}");
    while client.query_one(&left, &[]).unwrap().get::<_, bool>(0) {
        std::thread::sleep(Duration::from_millis(10));
    }
    host.shutdown();
}

/// `processes` husk processes sharing one PostgreSQL schema run `jobs`
/// pre-enqueued jobs; timed from `go` until the last process exits.
fn measure_pg_processes(url: &str, processes: usize, jobs: usize) -> f64 {
    use std::io::{BufRead, Write};
    let schema = format!("bench_{}_{processes}", std::process::id());
    let store = postgres(url, &schema);
    let host = Host::builder().store(store.clone()).topic(Topic::wasm("bench", transform())).start_workers(false);
    host.build().unwrap().submit(Enqueue::many("bench", inputs(jobs))).unwrap();
    let mut children: Vec<_> = (0..processes)
        .map(|_| {
            std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--pg-worker", url, &schema])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in &mut children {
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "ready");
    }
    let started = Instant::now();
    for child in &mut children {
        writeln!(child.stdin.as_mut().unwrap(), "go").unwrap();
    }
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let elapsed = started.elapsed();
    let ended = store.outcomes_after(0, jobs * 2).unwrap();
    assert_eq!(ended.len(), jobs, "every job ended once");
    assert!(ended.iter().all(|o| matches!(o.outcome, Outcome::Completed { .. })));
    drop(store);
    drop_schema(url, &schema);
    let rate = jobs as f64 / elapsed.as_secs_f64();
    println!(
        "{}, PostgreSQL, {processes} processes x 2 workers: {jobs} jobs in {:.2} s = {rate:.0} jobs/s",
        runs_as(),
        elapsed.as_secs_f64()
    );
    rate
}

/// The PostgreSQL throughput runs: one process, then two.
fn measure_pg_throughput(url: &str, jobs: usize) {
    let schema = format!("bench_{}", std::process::id());
    let label = format!("{}, PostgreSQL (fsync on), 1 process x 2 workers", runs_as());
    measure(&label, bench_topic(), postgres(url, &schema), jobs);
    drop_schema(url, &schema);
    measure_pg_processes(url, 2, jobs);
}

/// When each job's terminal outcome arrived.
#[derive(Default)]
struct Arrivals(Mutex<Vec<(u64, Instant)>>);

impl OutcomeSink for Arrivals {
    fn deliver(&self, outcome: &TerminalOutcome) {
        let now = Instant::now();
        self.0.lock().unwrap().push((outcome.job_id.0, now));
    }
}

/// Clients enqueuing at once, as an API server's requests do.
const LATENCY_CLIENTS: usize = 4;

/// Jobs of each latency run.
const LATENCY_JOBS: usize = 5_000;

/// [`measure_latency`] on PostgreSQL, in a schema of its own, dropped after.
fn measure_latency_postgres(url: &str, batch: usize, jobs: usize) {
    let schema = format!("lat_{}_{batch}", std::process::id());
    measure_latency("PostgreSQL", postgres(url, &schema), batch, jobs);
    drop_schema(url, &schema);
}

/// Enqueues `jobs` one per call at a steady 1,000/s (job `i` is due `i` ms
/// after the start, spread over [`LATENCY_CLIENTS`] threads) and reports
/// the p50/p99 latency, from the start of each enqueue call to the
/// delivery of its terminal outcome.
fn measure_latency(label: &str, store: Arc<dyn JobStore>, batch: usize, jobs: usize) {
    let sink = Arc::new(Arrivals::default());
    let host = Host::builder()
        .store(store)
        .sink(sink.clone())
        .topic(Topic::wasm("bench", transform()).with_workers(2).with_fetch_batch(batch))
        .build()
        .unwrap();
    let start = Instant::now();
    let inputs = inputs(jobs);
    let sent: Vec<(u64, Instant)> = std::thread::scope(|scope| {
        let clients: Vec<_> = (0..LATENCY_CLIENTS)
            .map(|client| {
                let (host, inputs) = (&host, &inputs);
                scope.spawn(move || {
                    let mut sent = Vec::new();
                    for i in (client..jobs).step_by(LATENCY_CLIENTS) {
                        let due = start + Duration::from_millis(i as u64);
                        std::thread::sleep(due.saturating_duration_since(Instant::now()));
                        let at = Instant::now();
                        sent.push((host.enqueue("bench", inputs[i].clone()).unwrap().0, at));
                    }
                    sent
                })
            })
            .collect();
        clients.into_iter().flat_map(|c| c.join().unwrap()).collect()
    });
    let rate = jobs as f64 / start.elapsed().as_secs_f64();
    while sink.0.lock().unwrap().len() < jobs {
        std::thread::sleep(Duration::from_millis(10));
    }
    host.shutdown();
    let arrived: std::collections::HashMap<u64, Instant> = sink.0.lock().unwrap().iter().copied().collect();
    let mut latencies: Vec<Duration> = sent.iter().map(|(id, at)| arrived[id] - *at).collect();
    latencies.sort_unstable();
    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e3;
    println!(
        "latency, {label}, fetch batch {batch}: p50 {:.2} ms, p99 {:.2} ms (enqueued at {rate:.0} jobs/s by {LATENCY_CLIENTS} clients)",
        at(0.5),
        at(0.99)
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--pg-worker") {
        return pg_worker(&args[i + 1], &args[i + 2]);
    }
    let jobs = args.iter().skip(1).find_map(|a| a.parse().ok()).unwrap_or(200_000);
    if args.iter().any(|a| a == "--gate") {
        return measure_gate(jobs);
    }
    if args.iter().any(|a| a == "--inputs") {
        return measure_inputs(jobs);
    }
    if args.iter().any(|a| a == "--priority") {
        return measure_priority(jobs);
    }
    let memory = || Arc::new(MemoryStore::new()) as Arc<dyn JobStore>;
    if args.iter().any(|a| a == "--latency") {
        // Only the latency runs, on PostgreSQL.
        let url = postgres_url().expect("a PostgreSQL server (scripts/postgres start)");
        for batch in [1, 32] {
            measure_latency_postgres(&url, batch, LATENCY_JOBS);
        }
        return;
    }
    if args.iter().any(|a| a == "postgres") {
        let url = postgres_url().expect("a PostgreSQL server (scripts/postgres start)");
        return measure_pg_throughput(&url, jobs);
    }
    let dir = tempfile::tempdir().unwrap();
    let sqlite = || {
        let path = dir.path().join(format!("bench-{}.db", fastrand::u32(..)));
        Arc::new(SqliteStore::open(&path, Durability::Normal).unwrap()) as Arc<dyn JobStore>
    };
    let sqlite_throughput = || {
        measure("wasm transform, SQLite store (synchronous=NORMAL)", Topic::wasm("bench", transform()), sqlite(), jobs)
    };
    if args.iter().any(|a| a == "sqlite") {
        sqlite_throughput();
        for batch in [1, 32] {
            measure_latency("SQLite store", sqlite(), batch, LATENCY_JOBS);
        }
        return;
    }
    let native =
        measure("native handler, memory store", Topic::native("bench", Arc::new(NativeTransform)), memory(), jobs);
    let wasm = measure("wasm transform, memory store", Topic::wasm("bench", transform()), memory(), jobs);
    println!("wasm / native = {:.2}", wasm / native);
    sqlite_throughput();
    let url = postgres_url();
    match &url {
        Some(url) => measure_pg_throughput(url, jobs),
        None => println!("PostgreSQL skipped: no server (run `scripts/postgres start` or set HUSK_TEST_POSTGRES)"),
    }
    for batch in [1, 32] {
        measure_latency("memory store", memory(), batch, LATENCY_JOBS);
        measure_latency("SQLite store", sqlite(), batch, LATENCY_JOBS);
        if let Some(url) = &url {
            measure_latency_postgres(url, batch, LATENCY_JOBS);
        }
    }
}

/// `-- --gate [JOBS]`: the cost of the cluster-wide concurrency gate on
/// PostgreSQL: the same run without a tenant limit, then with one high
/// enough never to hold a job back (2 workers x the batch), so only the
/// leases' cost shows; three rounds each, alternating.
fn measure_gate(jobs: usize) {
    let Some(url) = postgres_url() else {
        return println!("PostgreSQL skipped: no server (run `scripts/postgres start` or set HUSK_TEST_POSTGRES)");
    };
    let limit = 2 * batch();
    for round in 0..3 {
        for gate in [None, Some(limit)] {
            let schema = format!("gate_{}_{round}_{}", std::process::id(), gate.is_some());
            let label = match gate {
                Some(limit) => format!("PostgreSQL, 1 process x 2 workers, cluster-wide gate of {limit}"),
                None => "PostgreSQL, 1 process x 2 workers, no gate".to_owned(),
            };
            measure_gated(&label, Topic::wasm("bench", transform()), postgres(&url, &schema), jobs, gate);
            drop_schema(&url, &schema);
        }
    }
}

/// `-- --inputs [JOBS]`: the cost of keeping each job's input with its
/// outcome, on SQLite and on PostgreSQL (1 process x 2 workers): the same
/// run with inputs kept (the default) and dropped (`[retention]
/// drop_inputs`), for the bench's ~35-byte inputs and for inputs padded to
/// about 1 KiB; three rounds each, alternating.
fn measure_inputs(jobs: usize) {
    let url = postgres_url();
    let dir = tempfile::tempdir().unwrap();
    let padded = |jobs| -> Vec<Vec<u8>> {
        let note = "x".repeat(1000);
        (0..jobs).map(|i| format!(r#"{{"name":"user-{i}","amount":{i}.5,"note":"{note}"}}"#).into_bytes()).collect()
    };
    for (size, make) in [("35 B", inputs as fn(usize) -> Vec<Vec<u8>>), ("1 KiB", padded)] {
        for round in 0..3 {
            for drop in [false, true] {
                let topic = || {
                    let topic = Topic::wasm("bench", transform());
                    if drop { topic.dropping_inputs() } else { topic }
                };
                let kept = if drop { "dropped" } else { "kept" };
                let path = dir.path().join(format!("inputs-{round}-{drop}-{}.db", size.len()));
                let sqlite = Arc::new(SqliteStore::open(&path, Durability::Normal).unwrap());
                run_measured(&format!("SQLite, {size} inputs {kept}"), topic(), sqlite, make(jobs), None);
                if let Some(url) = &url {
                    let schema = format!("inputs_{}_{round}_{drop}_{}", std::process::id(), size.len());
                    let label = format!("PostgreSQL, 1 process x 2 workers, {size} inputs {kept}");
                    run_measured(&label, topic(), postgres(url, &schema), make(jobs), None);
                    drop_schema(url, &schema);
                }
            }
        }
    }
}

/// Jobs waiting at the lowest priority in [`measure_priority`]'s runs.
const BACKLOG: usize = 100_000;

/// `-- --priority [JOBS]`: `JOBS` jobs at priority 0 run with no backlog,
/// then past [`BACKLOG`] jobs waiting at priority -100 (enqueued first, so
/// older): the claim's cost should not depend on the backlog (its index
/// yields the highest priority first). On SQLite and on PostgreSQL (1
/// process x 2 workers), two rounds alternating; timed until the `JOBS`
/// jobs ended, each checked to be one of them.
fn measure_priority(jobs: usize) {
    let url = postgres_url();
    let dir = tempfile::tempdir().unwrap();
    for round in 0..2 {
        for backlog in [0, BACKLOG] {
            let path = dir.path().join(format!("priority-{round}-{backlog}.db"));
            let sqlite = Arc::new(SqliteStore::open(&path, Durability::Normal).unwrap());
            run_past_backlog(&format!("SQLite, {backlog} waiting below"), sqlite, backlog, jobs);
            if let Some(url) = &url {
                let schema = format!("priority_{}_{round}_{backlog}", std::process::id());
                let label = format!("PostgreSQL, 1 process x 2 workers, {backlog} waiting below");
                run_past_backlog(&label, postgres(url, &schema), backlog, jobs);
                drop_schema(url, &schema);
            }
        }
    }
}

/// Counts the outcomes of jobs above `above` (the prioritized ones) apart
/// from the others, and wakes the bench when `target` of them arrived.
#[derive(Default)]
struct PastBacklog {
    above: AtomicU64,
    target: AtomicU64,
    prioritized: AtomicU64,
    backlog: AtomicU64,
    done: Mutex<bool>,
    all: Condvar,
}

impl OutcomeSink for PastBacklog {
    fn deliver(&self, outcome: &TerminalOutcome) {
        if outcome.job_id.0 <= self.above.load(Ordering::Relaxed) {
            self.backlog.fetch_add(1, Ordering::Relaxed);
        } else if self.prioritized.fetch_add(1, Ordering::Relaxed) + 1 >= self.target.load(Ordering::Relaxed) {
            *self.done.lock().unwrap() = true;
            self.all.notify_all();
        }
    }
}

/// Enqueues `backlog` jobs at priority -100, then `jobs` at 0, and times
/// the workers until the `jobs` ended; says how many backlog jobs ended
/// meanwhile (those claimed in a batch with the last of the others, or
/// after them while other batches still ran: at most a few batches).
fn run_past_backlog(label: &str, store: Arc<dyn JobStore>, backlog: usize, jobs: usize) {
    let sink = Arc::new(PastBacklog::default());
    sink.target.store(jobs as u64, Ordering::Relaxed);
    let host = Host::builder()
        .store(store)
        .engine(EngineConfig::default())
        .sink(sink.clone())
        .topic(Topic::wasm("bench", transform()).with_workers(2).with_fetch_batch(batch()))
        .start_workers(false)
        .build()
        .unwrap();
    let at = |priority| move |input| EnqueueJob { input, priority, ..EnqueueJob::default() };
    for chunk in inputs(backlog).chunks(10_000) {
        let enqueued = host.submit(Enqueue::jobs("bench", chunk.iter().cloned().map(at(-100)).collect())).unwrap();
        sink.above.store(enqueued.last().map_or(0, |e| e.id.0), Ordering::Relaxed);
    }
    host.submit(Enqueue::jobs("bench", inputs(jobs).into_iter().map(at(0)).collect())).unwrap();
    let started = Instant::now();
    host.start_workers().unwrap();
    let done = sink.done.lock().unwrap();
    let (done, timeout) = sink.all.wait_timeout_while(done, Duration::from_secs(600), |d| !*d).unwrap();
    let elapsed = started.elapsed();
    drop(done);
    assert!(!timeout.timed_out(), "{label}: timed out");
    let backlog_ended = sink.backlog.load(Ordering::Relaxed);
    host.shutdown();
    let rate = jobs as f64 / elapsed.as_secs_f64();
    println!(
        "{label}: {jobs} jobs in {:.2} s = {rate:.0} jobs/s ({backlog_ended} backlog jobs ended meanwhile)",
        elapsed.as_secs_f64()
    );
}
