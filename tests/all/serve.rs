//! `husk serve` as a real process: killed with SIGKILL mid-run and started
//! again on the same SQLite file; three processes sharing one PostgreSQL
//! with one of them killed; a SIGTERM that releases running jobs unspent;
//! bad config and store input at start.
//!
//! These tests wait for another process to make progress: they poll the
//! store (every 20 ms, up to a generous limit) and assert on what it holds,
//! never on how long anything took.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use husk::fault::codes;
use husk::outcome::{Outcome, TerminalOutcome};
use husk::retry::RetryPolicySpec;
use husk::store::{Depth, Enqueued, JobId, JobState, JobStore, NewJob};
use husk::wire::body_value;
use husk_sqlite::{Durability, SqliteStore};

use crate::rig::pg::TestSchema;
use crate::support::guest;

/// Attempts of every job in these tests.
const MAX_ATTEMPTS: u32 = 4;

fn policy() -> RetryPolicySpec {
    RetryPolicySpec::Fixed { max_attempts: MAX_ATTEMPTS, delay: Duration::from_millis(20) }
}

/// A config with the transform and flaky topics; `store_lines` say where
/// jobs live.
fn config(dir: &Path, store_lines: &str) -> PathBuf {
    let text = format!(
        r#"{store_lines}
epoch_tick = "10ms"
shutdown_grace = "5s"

[topics.transform]
plugin = "{transform}"
workers = 2
fetch_batch = 16
lock_duration = "2s"
retry = {{ kind = "fixed", max_attempts = {MAX_ATTEMPTS}, delay = "20ms" }}

[topics.flaky]
plugin = "{flaky}"
workers = 2
fetch_batch = 8
lock_duration = "2s"
retry = {{ kind = "fixed", max_attempts = {MAX_ATTEMPTS}, delay = "20ms" }}
mapper_rules = [{{ code = "flaky.*", classify_as = "technical" }}]
"#,
        transform = guest("transform").display(),
        flaky = guest("flaky").display(),
    );
    let path = dir.join("husk.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn serve(config: &Path, log: &Path) -> Child {
    let log = std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap();
    Command::new(env!("CARGO_BIN_EXE_husk"))
        .args(["serve", "--no-cache", "--listen", "127.0.0.1:0", "--config"])
        .arg(config)
        .env("RUST_LOG", "info,husk::guest=off")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap()
}

/// Sends SIGTERM and waits for a clean exit.
fn terminate(mut child: Child) {
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert!(exit.success(), "husk serve exited with {exit} after SIGTERM");
}

/// `count` jobs: every fifth a flaky one succeeding on attempt 1..=5 (5:
/// never within the policy), the rest transforms. Returns the expected
/// attempt of success (`None`: exhausts) by input.
fn jobs(count: usize) -> Vec<NewJob> {
    (0..count)
        .map(|i| {
            let (topic, input) = if i % 5 == 0 {
                ("flaky", serde_json::json!({ "succeed_on_attempt": (i / 5) % 5 + 1 }))
            } else {
                ("transform", serde_json::json!({ "name": format!("job {i}"), "n": i }))
            };
            let input = input.to_string().into_bytes();
            NewJob {
                topic: topic.into(),
                input,
                policy: policy(),
                not_before: None,
                key: None,
                keep_input: true,
                priority: 0,
            }
        })
        .collect()
}

/// The ids of enqueued jobs.
fn ids_of(enqueued: Vec<Enqueued>) -> Vec<JobId> {
    enqueued.into_iter().map(|e| e.id).collect()
}

/// Polls `f` every 20 ms until it returns `Some`, for at most `limit`.
fn wait_for<T>(what: &str, limit: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(value) = f() {
            return value;
        }
        assert!(start.elapsed() < limit, "gave up waiting for {what} after {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn running(store: &dyn JobStore) -> u64 {
    store.depths().unwrap().iter().map(|(_, d): &(String, Depth)| d.running).sum()
}

fn all_outcomes(store: &dyn JobStore) -> Vec<TerminalOutcome> {
    store.outcomes_after(0, usize::MAX >> 1).unwrap()
}

/// Counts outcomes as they are logged, reading only the new ones.
#[derive(Default)]
struct Counter {
    cursor: u64,
    count: usize,
}

impl Counter {
    fn poll(&mut self, store: &dyn JobStore) -> usize {
        let new = store.outcomes_after(self.cursor, 10_000).unwrap();
        if let Some(last) = new.last() {
            self.cursor = last.seq;
        }
        self.count += new.len();
        self.count
    }
}

/// Every job ended exactly once, within its policy, with the outcome its
/// input calls for. Returns how many jobs used more attempts than their
/// input needed (reclaimed after a lock expired).
fn check_outcomes(store: &dyn JobStore, ids: &[JobId], inputs: &HashMap<JobId, NewJob>) -> usize {
    let outcomes = all_outcomes(store);
    let mut by_job: HashMap<JobId, &TerminalOutcome> = HashMap::new();
    for outcome in &outcomes {
        assert!(by_job.insert(outcome.job_id, outcome).is_none(), "job {} has two terminal outcomes", outcome.job_id);
    }
    assert_eq!(by_job.len(), ids.len(), "every job has a terminal outcome");
    assert!(outcomes.windows(2).all(|w| w[0].seq < w[1].seq), "outcome log in seq order");
    let mut reclaimed = 0;
    for id in ids {
        let outcome = by_job.get(id).unwrap_or_else(|| panic!("job {id} has no outcome"));
        let job = &inputs[id];
        assert!(outcome.attempts >= 1 && outcome.attempts <= MAX_ATTEMPTS, "job {id}: {} attempts", outcome.attempts);
        let needed = if job.topic == "flaky" {
            let input: serde_json::Value = serde_json::from_slice(&job.input).unwrap();
            input["succeed_on_attempt"].as_u64().unwrap() as u32
        } else {
            1
        };
        if let Outcome::Failed { attempts, last_fault, .. } = &outcome.outcome {
            // Exhausted: by its input, or because a lock expiry (an
            // attempt spent by the killed process) took its last attempt.
            let expired_last = last_fault.code == codes::LOCK_EXPIRED && needed == MAX_ATTEMPTS;
            assert!(*attempts == MAX_ATTEMPTS && (needed > MAX_ATTEMPTS || expired_last), "job {id}: {outcome:?}");
            reclaimed += usize::from(expired_last);
            continue;
        }
        assert!(needed <= MAX_ATTEMPTS, "job {id} cannot succeed within its policy: {outcome:?}");
        let Outcome::Completed { output } = &outcome.outcome else { panic!("job {id} should complete: {outcome:?}") };
        assert!(outcome.attempts >= needed, "job {id} completed before attempt {needed}");
        if outcome.attempts > needed {
            reclaimed += 1;
        }
        if job.topic == "flaky" {
            assert_eq!(body_value(output)["attempt"], outcome.attempts, "job {id}: the run that completed it");
        }
    }
    reclaimed
}

#[test]
fn sqlite_kill_9_mid_run_and_restart_loses_and_duplicates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("husk.db");
    let config = config(dir.path(), &format!("store = \"{}\"", db.display()));
    let log = dir.path().join("husk.log");
    let store = SqliteStore::open(&db, Durability::Normal).unwrap();
    let new_jobs = jobs(5_000);
    let ids = ids_of(store.enqueue(new_jobs.clone(), SystemTime::now()).unwrap());
    let inputs: HashMap<JobId, NewJob> = ids.iter().copied().zip(new_jobs).collect();

    let mut first = serve(&config, &log);
    let mut ended = Counter::default();
    wait_for("1,500 outcomes with jobs running", Duration::from_secs(120), || {
        (ended.poll(&store) >= 1_500 && running(&store) > 0).then_some(())
    });
    first.kill().unwrap(); // SIGKILL
    first.wait().unwrap();
    let locked_at_kill = running(&store);
    eprintln!("killed with {} outcomes and {locked_at_kill} jobs locked", ended.poll(&store));

    let second = serve(&config, &log);
    wait_for("every job to end", Duration::from_secs(180), || (ended.poll(&store) >= ids.len()).then_some(()));
    terminate(second);
    let reclaimed = check_outcomes(&store, &ids, &inputs);
    eprintln!("{reclaimed} jobs took an extra attempt after their lock expired");
    if locked_at_kill > 0 {
        assert!(reclaimed > 0, "jobs locked by the killed process were reclaimed as an attempt");
    }
    assert!(store.depths().unwrap().is_empty(), "no live job left");
}

#[test]
#[cfg_attr(not(husk_postgres), ignore = "no PostgreSQL test server: run scripts/postgres start")]
fn postgres_three_processes_one_killed_lose_and_duplicate_nothing() {
    let Some(url) = crate::rig::pg::url() else { return };
    let schema = TestSchema::new(url);
    let store: Arc<dyn JobStore> = Arc::new(schema.open());
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), &format!("store = \"{url}\"\npostgres_schema = \"{}\"", schema.name));
    let log = dir.path().join("husk.log");
    let new_jobs = jobs(10_000);
    // Half before the processes start, half while they run (woken by NOTIFY).
    let mut ids = ids_of(store.enqueue(new_jobs[..5_000].to_vec(), SystemTime::now()).unwrap());
    let mut children: Vec<Child> = (0..3).map(|_| serve(&config, &log)).collect();
    let mut ended = Counter::default();
    wait_for("the first outcomes", Duration::from_secs(120), || (ended.poll(&*store) > 0).then_some(()));
    ids.extend(ids_of(store.enqueue(new_jobs[5_000..].to_vec(), SystemTime::now()).unwrap()));
    let inputs: HashMap<JobId, NewJob> = ids.iter().copied().zip(new_jobs).collect();

    wait_for("3,000 outcomes with jobs running", Duration::from_secs(120), || {
        (ended.poll(&*store) >= 3_000 && running(&*store) > 0).then_some(())
    });
    let mut victim = children.remove(0);
    victim.kill().unwrap();
    victim.wait().unwrap();
    eprintln!("killed one of three with {} outcomes", ended.poll(&*store));

    wait_for("every job to end", Duration::from_secs(240), || (ended.poll(&*store) >= ids.len()).then_some(()));
    children.into_iter().for_each(terminate);
    let reclaimed = check_outcomes(&*store, &ids, &inputs);
    eprintln!("{reclaimed} jobs took an extra attempt after their lock expired");
    assert!(store.depths().unwrap().is_empty(), "no live job left");
}

#[test]
fn sigterm_releases_running_and_claimed_jobs_without_spending_an_attempt() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("husk.db");
    let text = format!(
        r#"store = "{db}"
shutdown_grace = "100ms"

[topics.spin]
plugin = "{spin}"
workers = 1
fetch_batch = 4
deadline = "60s"
"#,
        db = db.display(),
        spin = guest("spin").display(),
    );
    let config = dir.path().join("husk.toml");
    std::fs::write(&config, text).unwrap();
    let store = SqliteStore::open(&db, Durability::Normal).unwrap();
    let job = NewJob {
        topic: "spin".into(),
        input: b"{}".to_vec(),
        policy: policy(),
        not_before: None,
        key: None,
        keep_input: true,
        priority: 0,
    };
    let ids = ids_of(store.enqueue(vec![job; 4], SystemTime::now()).unwrap());

    let child = serve(&config, &dir.path().join("husk.log"));
    wait_for("the batch to be claimed", Duration::from_secs(60), || (running(&store) == 4).then_some(()));
    terminate(child);

    assert!(all_outcomes(&store).is_empty(), "nothing ended");
    for id in ids {
        let record = store.get(id).unwrap().unwrap();
        assert_eq!(record.state, JobState::Queued, "job {id} released");
        assert_eq!(record.attempt, 1, "job {id}: the attempt was not spent");
        assert!(record.last_fault.is_none(), "job {id}: no fault recorded");
    }
}

/// Writes `text` as `dir/husk.toml` and starts `husk serve` on it (with
/// `env` set), which must refuse it: exit code 1 and one line on stderr,
/// returned.
pub fn start_error(dir: &Path, text: &str, env: &[(&str, &str)]) -> String {
    let config = dir.join("husk.toml");
    std::fs::write(&config, text).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_husk"))
        .args(["serve", "--no-cache", "--listen", "127.0.0.1:0", "--config"])
        .arg(&config)
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A config it should refuse but accepts makes it serve: fail, not hang.
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("husk serve started instead of refusing: {text}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "husk serve should refuse: {text}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    stderr
}

#[test]
fn bad_config_and_store_input_fail_at_start_with_one_line_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let run = |text: &str| start_error(dir.path(), text, &[]);
    let transform = guest("transform").display().to_string();
    let topic = format!("[topics.t]\nplugin = \"{transform}\"\n");

    let error = run(&format!("store = \"memory\"\nworkers = 2\n{topic}"));
    assert!(error.contains("husk.toml") && error.contains("workers") && error.contains("unknown field"), "{error}");
    let error = run(&format!("store = \"memory\"\n{topic}fetch_batch = \"many\"\n"));
    assert!(error.contains("topics.t.fetch_batch") && error.contains("line 4"), "{error}");
    let error = run(&format!("store = \"memory\"\n{topic}mapper_deadline = \"1s\"\n"));
    assert!(error.contains("topics.t.mapper_deadline") && error.contains("no mapper"), "{error}");
    let rules = "mapper_rules = [{ code = \"x\", classify_as = \"technical\" }]\n";
    let error = run(&format!("store = \"memory\"\n{topic}mapper_deadline = \"1s\"\n{rules}"));
    assert!(error.contains("topics.t.mapper_deadline") && error.contains("`mapper_rules`"), "{error}");
    let error = run(&format!("store = \"memory\"\n[retention]\ndrop_inputs = [\"t\", \"typo\"]\n{topic}"));
    assert!(error.contains("retention.drop_inputs[1]") && error.contains("no topic `typo`"), "{error}");
    let error = run(&format!("store = \"memory\"\n{topic}permanent_faults = [\"billing.*\", \"*.x\"]\n"));
    assert!(error.contains("topics.t.permanent_faults") && error.contains("`*.x`"), "{error}");
    for (lines, key) in [
        ("schedule = \"*/5 * * *\"\n", "topics.t.schedule"),
        ("schedule = \"* * * * *\"\ntimezone = \"Mars/Base\"\n", "topics.t.timezone"),
        ("input = { name = \"x\" }\n", "topics.t.input"),
        ("schedule = \"* * * * *\"\ncatch_up = \"0s\"\n", "topics.t.catch_up"),
    ] {
        let error = run(&format!("store = \"memory\"\n{topic}{lines}"));
        assert!(error.contains(key), "{key}: {error}");
    }
    let error = run(&format!("store = \"memory\"\npermanent_faults = [\"\"]\n{topic}"));
    assert!(error.contains("permanent_faults") && error.contains("names no code"), "{error}");

    let garbage = dir.path().join("garbage.db");
    std::fs::write(&garbage, vec![0x5a; 8192]).unwrap();
    let error = run(&format!("store = \"{}\"\n{topic}", garbage.display()));
    assert!(error.contains(&garbage.display().to_string()), "{error}");
    assert_eq!(std::fs::read(&garbage).unwrap(), vec![0x5a; 8192], "the file is unchanged");

    let error = run(&format!("store = \"postgres://husk:s3cret@127.0.0.1:1/husk\"\n{topic}"));
    assert!(error.contains("postgres://husk:***@127.0.0.1:1/husk") && !error.contains("s3cret"), "{error}");
    // The cause is named once: the store's error keeps it as its cause, not
    // as a source the error's printed chain would repeat.
    assert_eq!(error.matches("Connection refused").count(), 1, "{error}");
    if let Some(url) = crate::rig::pg::url() {
        let wrong = husk_postgres::redact_url(url).replace("***", "not-the-password");
        let error = run(&format!("store = \"{wrong}\"\n{topic}"));
        assert!(error.contains("password authentication failed") && !error.contains("not-the-password"), "{error}");
    }
}
