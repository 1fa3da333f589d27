//! The dashboard's cost, against a real `husk serve` (SQLite store):
//!
//! - page weight (HTML + CSS + JS bytes) of the overview and of the job list
//!   with 10,000 jobs in the store;
//! - the server's time to render the job list (p50, p99 of the whole
//!   request on loopback), idle and while the pipeline runs at full speed;
//! - the pipeline's jobs/s with the dashboard open — its event stream
//!   (`/ui/events`) read and the job list's rows re-fetched on each event,
//!   as htmx does, the overview refreshed every 2 s, and on top the whole
//!   job list loaded every 100 ms — against without, alternating.
//!
//! `cargo bench -p husk-cli --bench ui [-- JOBS]` (default 200,000 per run).

#[path = "support/serve.rs"]
mod serve;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use husk_cli::client::Client;
use husk_server::tokens::token_hash;

const TOKEN: &str = "bench-token";

fn config(db: &std::path::Path) -> String {
    format!(
        r#"store = "{db}"
max_batch_size = "16MiB"

[tenants.bench]
tokens = ["sha256:{hash}"]

[topics.bench]
tenant = "bench"
plugin = "{plugin}"
fetch_batch = 32

[topics.held]
tenant = "bench"
plugin = "{plugin}"
"#,
        db = db.display(),
        hash = token_hash(TOKEN),
        plugin = std::path::Path::new(env!("HUSK_GUEST_DIR")).join("transform.wasm").display(),
    )
}

/// A signed-in dashboard client.
struct Browser {
    agent: ureq::Agent,
    base: String,
    cookie: String,
}

impl Browser {
    fn sign_in(base: &str) -> Self {
        let agent = ureq::Agent::config_builder().max_redirects(0).http_status_as_error(false).build().new_agent();
        let answer = agent.post(&format!("{base}/ui/login")).send_form([("token", TOKEN)]).unwrap();
        let cookie = answer.headers().get("set-cookie").unwrap().to_str().unwrap();
        let cookie = cookie.split(';').next().unwrap().to_owned();
        Self { agent, base: base.to_owned(), cookie }
    }

    /// The body of `path`, and how long the request took.
    fn get(&self, path: &str) -> (String, Duration) {
        let started = Instant::now();
        let answer = self.agent.get(&format!("{}{path}", self.base)).header("Cookie", &self.cookie).call().unwrap();
        assert_eq!(answer.status(), 200, "{path}");
        let body = answer.into_body().read_to_string().unwrap();
        (body, started.elapsed())
    }
}

/// Enqueues `jobs` jobs on `topic` in batches of 1,000.
fn enqueue(client: &Client, topic: &str, jobs: usize) {
    for first in (0..jobs).step_by(1000) {
        let items: Vec<String> = (first..(first + 1000).min(jobs))
            .map(|i| format!(r#"{{"input":{{"name":"user-{i}","amount":{i}.5}}}}"#))
            .collect();
        let body = format!("[{}]", items.join(","));
        client
            .post(&format!("/v1/topics/{topic}/jobs/batch"), Some((body.as_bytes(), "application/json")), &[])
            .unwrap();
    }
}

/// Jobs of `topic` that ended, as the server's metrics count them.
fn ended(base: &str, topic: &str) -> u64 {
    let text = ureq::get(&format!("{base}/metrics")).call().unwrap().into_body().read_to_string().unwrap();
    let prefix = format!("husk_jobs_total{{topic=\"{topic}\",");
    text.lines()
        .filter(|line| line.starts_with(&prefix))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// Reads the dashboard's event stream until `stop`, re-fetching the job
/// list's rows on each `outcomes` event as the page does; counts the events
/// in `events`. (Detached: its read may outlast `stop` until the next
/// event or keep-alive, and fetches nothing then.)
fn watch_events(base: &str, stop: Arc<AtomicBool>, events: Arc<AtomicU64>) {
    use std::io::BufRead;
    let browser = Browser::sign_in(base);
    let stream = browser.agent.get(&format!("{base}/ui/events")).header("Cookie", &browser.cookie).call().unwrap();
    assert_eq!(stream.status(), 200);
    let lines = std::io::BufReader::new(stream.into_body().into_reader()).lines();
    for line in lines {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        if line.unwrap() == "event: outcomes" {
            events.fetch_add(1, Ordering::Relaxed);
            browser.get("/ui/jobs/rows?topic=bench");
        }
    }
}

/// Runs `jobs` jobs through `bench` and returns jobs/s; with `dashboard`,
/// the event stream is read (the rows re-fetched on each event), the
/// overview refreshes every 2 s and the job list loads every 100 ms
/// meanwhile, and the job list's request times and the events are returned
/// too.
fn run(client: &Client, base: &str, jobs: usize, dashboard: bool) -> (f64, Vec<Duration>, u64) {
    let stop = Arc::new(AtomicBool::new(false));
    let events = Arc::new(AtomicU64::new(0));
    if dashboard {
        let (stop, base, events) = (stop.clone(), base.to_owned(), events.clone());
        std::thread::spawn(move || watch_events(&base, stop, events));
    }
    let watcher = dashboard.then(|| {
        let (stop, base) = (stop.clone(), base.to_owned());
        std::thread::spawn(move || {
            let browser = Browser::sign_in(&base);
            let (mut times, mut last_overview) = (Vec::new(), Instant::now() - Duration::from_secs(2));
            while !stop.load(Ordering::Relaxed) {
                if last_overview.elapsed() >= Duration::from_secs(2) {
                    browser.get("/ui/overview");
                    last_overview = Instant::now();
                }
                times.push(browser.get("/ui/jobs?topic=bench").1);
                std::thread::sleep(Duration::from_millis(100));
            }
            times
        })
    });
    let target = ended(base, "bench") + jobs as u64;
    client.post("/v1/topics/bench/pause", None, &[]).unwrap();
    enqueue(client, "bench", jobs);
    let started = Instant::now();
    client.post("/v1/topics/bench/resume", None, &[]).unwrap();
    while ended(base, "bench") < target {
        std::thread::sleep(Duration::from_millis(20));
    }
    let rate = jobs as f64 / started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    (rate, watcher.map(|w| w.join().unwrap()).unwrap_or_default(), events.load(Ordering::Relaxed))
}

fn percentile(times: &mut [Duration], q: f64) -> f64 {
    times.sort();
    times[((times.len() as f64 * q) as usize).min(times.len() - 1)].as_secs_f64() * 1e3
}

fn main() {
    let jobs: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(200_000);
    let dir = tempfile::tempdir().unwrap();
    let server = serve::start(dir.path(), "ui", &config(&dir.path().join("husk.db")));
    let client = Client::new(&server.url, Some(TOKEN.to_owned()));

    // 10,000 jobs that stay in the store: a paused topic's.
    client.post("/v1/topics/held/pause", None, &[]).unwrap();
    enqueue(&client, "held", 10_000);
    let browser = Browser::sign_in(&server.url);
    let css = browser.get("/ui/assets/husk.css").0.len();
    let js = browser.get("/ui/assets/htmx.min.js").0.len() + browser.get("/ui/assets/htmx-ext-sse.min.js").0.len();
    let overview = browser.get("/ui").0.len();
    let list = browser.get("/ui/jobs").0.len();
    println!("page weight with 10,000 jobs in the store: CSS {css} B, JS (htmx and its sse extension) {js} B");
    println!("  overview: HTML {overview} B, in all {} B", overview + css + js);
    println!("  job list (newest 100 shown): HTML {list} B, in all {} B", list + css + js);

    let mut idle: Vec<Duration> = (0..200).map(|_| browser.get("/ui/jobs").1).collect();
    println!(
        "job list render, idle: p50 {:.2} ms, p99 {:.2} ms",
        percentile(&mut idle, 0.5),
        percentile(&mut idle, 0.99)
    );

    for round in 1..=3 {
        let (without, ..) = run(&client, &server.url, jobs, false);
        let (with, mut times, events) = run(&client, &server.url, jobs, true);
        println!(
            "round {round}: pipeline {without:.0} jobs/s without the dashboard, {with:.0} with it \
             ({events} outcome events; {} job-list loads meanwhile: p50 {:.2} ms, p99 {:.2} ms)",
            times.len(),
            percentile(&mut times, 0.5),
            percentile(&mut times, 0.99)
        );
    }
}
