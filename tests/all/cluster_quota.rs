//! A tenant's `max_concurrent` across processes sharing PostgreSQL: the
//! permits are leased from the store, so three processes of four workers
//! each never run more than the limit together (in the runs the store
//! records, and in permits leased, sampled meanwhile), and a process killed
//! with SIGKILL gives its permits back when its lease expires. `max_queued`
//! is counted in the store: enqueues racing on three processes admit exactly
//! the limit.

use std::time::{Duration, Instant, SystemTime};

use husk::store::{JobStore, PermitLease, Shared};
use husk_server::tokens::token_hash;
use serde_json::json;

use crate::rig::pg::TestSchema;
use crate::support::guest;
use crate::support_server::{Server, TOKEN_A};

const LIMIT: u64 = 3;

fn config(store_lines: &str) -> String {
    format!(
        r#"{store_lines}
epoch_tick = "10ms"
shutdown_grace = "2s"

[tenants.a]
tokens = ["sha256:{hash}"]
max_concurrent = {LIMIT}

[topics.slow]
tenant = "a"
plugin = "{sleeper}"
workers = 4
lock_duration = "2s"
retry = {{ kind = "fixed", max_attempts = 10, delay = "50ms" }}
"#,
        hash = token_hash(TOKEN_A),
        sleeper = guest("sleeper").display(),
    )
}

fn ended(store: &dyn JobStore) -> usize {
    store.outcomes_after(0, 100_000).unwrap().len()
}

/// The most runs recorded in the store that overlapped in time. A start is
/// kept to the millisecond: each run counts from 1 ms after its recorded
/// start, so no overlap is counted that was not there.
fn most_at_once(store: &dyn JobStore) -> usize {
    const PRECISION: Duration = Duration::from_millis(1);
    let mut edges: Vec<(SystemTime, i32)> = Vec::new();
    for outcome in store.outcomes_after(0, 100_000).unwrap() {
        let job = store.get(outcome.job_id).unwrap().expect("an ended job is kept");
        for attempt in job.attempts {
            if let (Some(start), Some(us)) = (attempt.started_at, attempt.duration_us)
                && Duration::from_micros(us) > PRECISION
            {
                edges.push((start + PRECISION, 1));
                edges.push((start + Duration::from_micros(us), -1));
            }
        }
    }
    // Ends before starts at the same instant.
    edges.sort();
    let (mut now, mut most) = (0, 0);
    for (_, step) in edges {
        now += step;
        most = most.max(now);
    }
    usize::try_from(most).unwrap()
}

#[test]
#[cfg_attr(not(husk_postgres), ignore = "no PostgreSQL test server: run scripts/postgres start")]
fn max_concurrent_holds_across_three_processes_and_a_killed_ones_permits_come_back() {
    let Some(url) = crate::rig::pg::url() else { return };
    let schema = TestSchema::new(url);
    let config = config(&format!("store = \"{url}\"\npostgres_schema = \"{}\"", schema.name));
    let mut servers: Vec<Server> = (0..3).map(|_| Server::process(&config)).collect();
    let store = schema.open();
    let a = servers[1].client(Some(TOKEN_A));
    const JOBS: usize = 120;
    // One batch, so the sampling below starts while most jobs still wait
    // (enqueued one by one on a loaded machine, half of them had ended
    // before the last was in, leaving nothing to sample).
    let batch = json!(vec![json!({ "input": { "sleep_ms": 50 } }); JOBS]).to_string();
    a.post("/v1/topics/slow/jobs/batch", Some((batch.as_bytes(), "application/json")), &[]).unwrap();

    // Permits leased, sampled while the jobs run: never above the limit.
    let mut most_leased = 0;
    let mut sample = || {
        most_leased = most_leased.max(store.permits_leased("a", SystemTime::now()).unwrap());
        assert!(most_leased as u64 <= LIMIT, "{most_leased} permits leased at once");
    };
    while ended(&store) < JOBS / 2 {
        sample();
    }

    // One killed: its leased permits and locked jobs come back when its
    // lease and locks expire (2 s), and every job still ends.
    let killed_at = Instant::now();
    servers.remove(0).kill9();
    let deadline = Instant::now() + Duration::from_secs(120);
    while ended(&store) < JOBS {
        assert!(Instant::now() < deadline, "jobs stuck after a kill: {} of {JOBS} ended", ended(&store));
        sample();
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("every job ended {:?} after the kill; at most {most_leased} permits leased", killed_at.elapsed());
    // Every run the store recorded, from the three processes: never more
    // than the limit at once (a run holds its permit throughout), and more
    // than one (the processes ran jobs side by side). Exact, where sampling
    // could miss the busiest moment or find the jobs over before it began.
    let most_running = most_at_once(&store);
    eprintln!("at most {most_running} jobs ran at once");
    assert!(most_running <= LIMIT as usize, "{most_running} jobs ran at once");
    assert!(most_running > 1, "the processes ran jobs side by side");
    let outcomes = store.outcomes_after(0, 100_000).unwrap();
    assert!(outcomes.iter().all(|o| o.outcome.kind() == "completed"), "every job completed");
    drop(servers);
}

#[test]
#[cfg_attr(not(husk_postgres), ignore = "no PostgreSQL test server: run scripts/postgres start")]
fn max_queued_admits_exactly_the_limit_from_three_processes_enqueueing_at_once() {
    let Some(url) = crate::rig::pg::url() else { return };
    let schema = TestSchema::new(url);
    const MAX: usize = 20;
    let config = format!(
        r#"store = "{url}"
postgres_schema = "{schema}"

[tenants.a]
tokens = ["sha256:{hash}"]
max_queued = {MAX}

[topics.held]
tenant = "a"
plugin = "{sleeper}"
"#,
        schema = schema.name,
        hash = token_hash(TOKEN_A),
        sleeper = guest("sleeper").display(),
    );
    let servers: Vec<Server> = (0..3).map(|_| Server::process(&config)).collect();
    // Paused: the jobs stay live, so each one admitted counts.
    servers[0].client(Some(TOKEN_A)).post("/v1/topics/held/pause", None, &[]).unwrap();
    // Six threads, two per process, each enqueueing 10 at once.
    let statuses: Vec<u16> = std::thread::scope(|scope| {
        let threads: Vec<_> = servers
            .iter()
            .chain(&servers)
            .map(|server| {
                let client = server.client(Some(TOKEN_A));
                scope.spawn(move || {
                    (0..10)
                        .map(|_| match crate::support_server::enqueue(&client, "held", &json!({ "sleep_ms": 1 })) {
                            Ok(_) => 201,
                            Err(husk_cli::client::ClientError::Api { status, .. }) => status,
                            Err(other) => panic!("enqueue failed: {other}"),
                        })
                        .collect::<Vec<u16>>()
                })
            })
            .collect();
        threads.into_iter().flat_map(|t| t.join().unwrap()).collect()
    });
    let admitted = statuses.iter().filter(|&&s| s == 201).count();
    let refused = statuses.iter().filter(|&&s| s == 429).count();
    assert_eq!((admitted, refused), (MAX, 60 - MAX), "statuses: {statuses:?}");
    let store = schema.open();
    let live: u64 = store.depths().unwrap().iter().map(|(_, d)| d.live()).sum();
    assert_eq!(live, MAX as u64, "the store holds exactly the admitted jobs");
}

#[test]
#[cfg_attr(not(husk_postgres), ignore = "no PostgreSQL test server: run scripts/postgres start")]
fn leases_count_other_holders_until_they_expire() {
    let Some(url) = crate::rig::pg::url() else { return };
    let schema = TestSchema::new(url);
    let store = schema.open();
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
    let until = t0 + Duration::from_secs(10);
    let lease = |tenant, holder, held, want, until| PermitLease { tenant, holder, held, want, limit: 3, until };
    // Limit 3: p takes 2, q asks 2 and gets the 1 left, p asks more and
    // gets none; another tenant's limit is its own.
    assert_eq!(store.acquire_permits(&lease("a", "p", 0, 2, until), t0).unwrap(), 2);
    assert_eq!(store.acquire_permits(&lease("a", "q", 0, 2, until), t0).unwrap(), 1);
    assert_eq!(store.acquire_permits(&lease("a", "p", 2, 1, until), t0).unwrap(), 0);
    assert_eq!(store.acquire_permits(&lease("b", "p", 0, 3, until), t0).unwrap(), 3);
    assert_eq!(store.permits_leased("a", t0).unwrap(), 3);
    // p gives one back: q gets it.
    store.release_permits("a", "p", 1, until).unwrap();
    assert_eq!(store.acquire_permits(&lease("a", "q", 1, 5, until), t0).unwrap(), 1);
    // q stops renewing (killed): once its lease expires, p gets its permits.
    let later = t0 + Duration::from_secs(5);
    assert_eq!(store.acquire_permits(&lease("a", "p", 1, 5, later + Duration::from_secs(10)), later).unwrap(), 0);
    let after = until + Duration::from_millis(1);
    assert_eq!(store.permits_leased("a", after).unwrap(), 1, "only p's renewed lease counts");
    assert_eq!(store.acquire_permits(&lease("a", "p", 1, 5, after + Duration::from_secs(10)), after).unwrap(), 2);
}
