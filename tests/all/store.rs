//! What is particular to one store (the contract common to all is the
//! conformance suite, in `dispatch`): retention (memory), reopening the file
//! (SQLite), refusals naming the file or URL, keys taken from two processes
//! (PostgreSQL).

use std::time::{Duration, SystemTime};

use husk::fault::Fault;
use husk::outcome::Outcome;
use husk::retry::RetryPolicySpec;
use husk::store::{
    AttemptRun, Enqueued, FetchRequest, Incidents, JobId, JobState, JobStore, MemoryStore, NewJob, Report, Reported,
};
use husk_sqlite::{Durability, SqliteStore};

const T0: Duration = Duration::from_secs(1_000_000);

fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + T0
}

fn job(topic: &str) -> NewJob {
    NewJob {
        topic: topic.into(),
        input: b"{}".to_vec(),
        policy: RetryPolicySpec::None,
        not_before: None,
        key: None,
        keep_input: true,
        priority: 0,
    }
}

fn run_to_end(store: &dyn JobStore, topic: &str, outcome: Outcome) -> JobId {
    let id = store.enqueue(vec![job(topic)], now()).unwrap()[0].id;
    let topics = [topic.to_owned()];
    let request = FetchRequest { worker: "w", topics: &topics, max: 1, lock_duration: Duration::from_secs(30) };
    let fetched = store.fetch_and_lock(request, now()).unwrap();
    let lock = fetched.jobs[0].lock;
    assert!(matches!(
        store.report(vec![(lock, Report::End { outcome, run: AttemptRun::default() })], now()).unwrap()[0],
        Reported::Ended(_)
    ));
    id
}

fn keyed(topic: &str, key: &str) -> NewJob {
    NewJob { key: Some(key.to_owned()), ..job(topic) }
}

fn failed() -> Outcome {
    Outcome::Failed {
        topic: "t".into(),
        attempts: 1,
        last_fault: Fault::new("x", ""),
        diagnostic: "x".into(),
        plugin_version: None,
    }
}

#[test]
fn retention_forgets_old_outcomes_but_keeps_open_incidents() {
    let store = MemoryStore::with_retained_outcomes(2);
    let incident = run_to_end(&store, "t", failed());
    let old = run_to_end(&store, "t", Outcome::Cancelled);
    let recent: Vec<JobId> = (0..2).map(|_| run_to_end(&store, "t", Outcome::Cancelled)).collect();
    assert!(store.get(old).unwrap().is_none(), "evicted beyond retention");
    for id in &recent {
        assert_eq!(store.get(*id).unwrap().unwrap().outcome.unwrap().outcome, Outcome::Cancelled);
    }
    let kept = store.get(incident).unwrap().unwrap();
    assert_eq!(kept.state, JobState::Terminal);
    assert!(matches!(kept.outcome.unwrap().outcome, Outcome::Failed { .. }));
    assert_eq!(store.open_incidents().unwrap().len(), 1);
    assert_eq!(store.outcomes_after(0, 10).unwrap().len(), 2);
}

#[test]
#[cfg_attr(not(husk_postgres), ignore = "no PostgreSQL test server: run scripts/postgres start")]
fn postgres_concurrent_enqueues_of_one_key_from_two_processes_make_one_job() {
    let Some(url) = crate::rig::pg::url() else { return };
    let schema = crate::rig::pg::TestSchema::new(url);
    // Two stores: two pools, as two processes would have.
    let stores = [schema.open(), schema.open()];
    let keys: Vec<String> = (0..40).map(|i| format!("key-{i:02}")).collect();
    let results: Vec<Vec<(String, Enqueued)>> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let (store, keys) = (&stores[t % 2], &keys);
                scope.spawn(move || {
                    // Batches of overlapping keys, in a different order per
                    // thread: waits on each other's keys, never a deadlock.
                    let mut order: Vec<&String> = keys.iter().collect();
                    if t % 2 == 1 {
                        order.reverse();
                    }
                    order.rotate_left(t * 7);
                    let mut seen = Vec::new();
                    for batch in order.chunks(6) {
                        let jobs = batch.iter().map(|k| keyed("t", k)).collect();
                        let enqueued = store.enqueue(jobs, now()).unwrap();
                        seen.extend(batch.iter().map(|k| (*k).clone()).zip(enqueued));
                    }
                    seen
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let mut by_key: std::collections::HashMap<String, Vec<Enqueued>> = std::collections::HashMap::new();
    for (key, enqueued) in results.into_iter().flatten() {
        by_key.entry(key).or_default().push(enqueued);
    }
    assert_eq!(by_key.len(), keys.len());
    for (key, results) in &by_key {
        assert_eq!(results.len(), 4);
        assert!(results.iter().all(|e| e.id == results[0].id), "{key}: one job for all: {results:?}");
        assert_eq!(results.iter().filter(|e| e.created).count(), 1, "{key}: created once: {results:?}");
    }
    let mut client = ::postgres::Client::connect(url, ::postgres::NoTls).unwrap();
    let count = format!("SELECT count(*) FROM {}.husk_jobs", schema.name);
    assert_eq!(client.query_one(&count, &[]).unwrap().get::<_, i64>(0), keys.len() as i64, "one job per key");
}

/// An enqueue's statement reads a key's holder from its snapshot, taken
/// before it waited on the holder's row: a holder that commits meanwhile is
/// read afterwards, and named. Both statements: one job alone (its own
/// statement) and a job with another (`husk_enqueue`).
#[test]
#[cfg_attr(not(husk_postgres), ignore = "no PostgreSQL test server: run scripts/postgres start")]
fn postgres_an_enqueue_waiting_on_a_key_named_by_a_commit_after_it_began_returns_that_job() {
    let Some(url) = crate::rig::pg::url() else { return };
    for jobs in [vec![keyed("t", "k")], vec![keyed("t", "k"), job("t")]] {
        let schema = crate::rig::pg::TestSchema::new(url);
        let store = schema.open();
        let mut holder = ::postgres::Client::connect(url, ::postgres::NoTls).unwrap();
        let mut watcher = ::postgres::Client::connect(url, ::postgres::NoTls).unwrap();
        let mut tx = holder.transaction().unwrap();
        tx.execute(&format!("INSERT INTO {}.husk_keys (key, job_id) VALUES ('k', 4242)", schema.name), &[]).unwrap();
        let n = jobs.len();
        let enqueued = std::thread::scope(|scope| {
            let enqueue = scope.spawn(|| store.enqueue(jobs, now()).unwrap());
            // Until the enqueue waits on the uncommitted key.
            let waiting = "SELECT count(*) FROM pg_locks WHERE NOT granted";
            let since = std::time::Instant::now();
            while watcher.query_one(waiting, &[]).unwrap().get::<_, i64>(0) == 0 {
                assert!(!enqueue.is_finished(), "the enqueue did not wait for the key's holder");
                assert!(since.elapsed() < Duration::from_secs(30), "the enqueue never waited on the key");
                std::thread::yield_now();
            }
            tx.commit().unwrap();
            enqueue.join().unwrap()
        });
        assert_eq!(enqueued[0], Enqueued { id: JobId(4242), created: false }, "{n} job(s): the holder, committed late");
        assert!(enqueued[1..].iter().all(|e| e.created), "the keyless job is written");
        let count = format!("SELECT count(*) FROM {}.husk_jobs", schema.name);
        let rows = watcher.query_one(&count, &[]).unwrap().get::<_, i64>(0);
        assert_eq!(rows, n as i64 - 1, "no row for the held key");
    }
}

#[test]
#[cfg_attr(not(husk_postgres), ignore = "no PostgreSQL test server: run scripts/postgres start")]
fn postgres_an_outcome_committed_late_is_not_skipped_by_the_outcome_cursor() {
    let Some(url) = crate::rig::pg::url() else { return };
    let schema = crate::rig::pg::TestSchema::new(url);
    let store = schema.open();
    // Another writer draws a seq and has not committed yet...
    let mut writer = ::postgres::Client::connect(url, ::postgres::NoTls).unwrap();
    writer.batch_execute(&format!("SET search_path = {}; BEGIN", schema.name)).unwrap();
    let late: i64 = writer.query_one("SELECT husk_next_seqs(1)", &[]).unwrap().get(0);
    // ...while a job ends and commits with a later seq.
    let id = run_to_end(&store, "t", Outcome::Cancelled);
    let ended = store.get(id).unwrap().unwrap().outcome.unwrap().seq;
    assert!(ended > late as u64);
    assert_eq!(store.outcomes_after(0, 10).unwrap(), vec![], "nothing past a writer still in flight");
    // The late writer commits an outcome with its earlier seq: the stream
    // gives both, in seq order, the late one first.
    writer
        .execute(
            "INSERT INTO husk_outcomes (seq, job_id, generation, topic, attempts, enqueued_at, finished_at, outcome,
                                        policy, last_fault, open_incident, input, history)
             SELECT $1, job_id + 1000, generation, topic, attempts, enqueued_at, finished_at, outcome, policy,
                    last_fault, open_incident, input, history
             FROM husk_outcomes WHERE seq = $2",
            &[&late, &(ended as i64)],
        )
        .unwrap();
    writer.batch_execute("COMMIT").unwrap();
    let stream: Vec<(u64, JobId)> = store.outcomes_after(0, 10).unwrap().iter().map(|o| (o.seq, o.job_id)).collect();
    assert_eq!(stream, vec![(late as u64, JobId(id.0 + 1000)), (ended, id)]);
    // A writer that rolls back leaves a gap, and holds nothing back after.
    writer.batch_execute("BEGIN").unwrap();
    writer.query_one("SELECT husk_next_seqs(1)", &[]).unwrap();
    let next = run_to_end(&store, "t", Outcome::Cancelled);
    assert_eq!(store.outcomes_after(ended, 10).unwrap(), vec![]);
    writer.batch_execute("ROLLBACK").unwrap();
    assert_eq!(store.outcomes_after(ended, 10).unwrap().iter().map(|o| o.job_id).collect::<Vec<_>>(), vec![next]);
}

/// Runs `jobs` jobs of `topic` through `store` (enqueue, claim, complete)
/// in rounds of 1,000.
fn complete_jobs(store: &dyn JobStore, topic: &str, jobs: usize) {
    let topics = [topic.to_owned()];
    for _ in 0..jobs / 1000 {
        store.enqueue(vec![job(topic); 1000], now()).unwrap();
        let request = FetchRequest { worker: "w", topics: &topics, max: 1000, lock_duration: Duration::from_secs(30) };
        let reports = (store.fetch_and_lock(request, now()).unwrap().jobs.iter())
            .map(|j| (j.lock, Report::Completed { output: b"{}".to_vec(), run: AttemptRun::default() }))
            .collect::<Vec<_>>();
        assert_eq!(reports.len(), 1000);
        assert!(store.report(reports, now()).unwrap().iter().all(|r| matches!(r, Reported::Ended(_))));
    }
}

#[test]
#[cfg_attr(not(husk_postgres), ignore = "no PostgreSQL test server: run scripts/postgres start")]
fn postgres_a_process_vacuums_the_job_table_once_its_claims_and_reports_left_enough_dead_rows() {
    let Some(url) = crate::rig::pg::url() else { return };
    let schema = crate::rig::pg::TestSchema::new(url);
    let store = schema.open();
    let mut client = ::postgres::Client::connect(url, ::postgres::NoTls).unwrap();
    // No autovacuum on this table: one holding it would make the store's
    // vacuum skip it (SKIP_LOCKED), uncounted.
    client.batch_execute(&format!("ALTER TABLE {}.husk_jobs SET (autovacuum_enabled = off)", schema.name)).unwrap();
    // Manual vacuums of this schema's job table (autovacuum counts apart).
    let vacuums = format!(
        "SELECT vacuum_count FROM pg_stat_user_tables WHERE schemaname = '{}' AND relname = 'husk_jobs'",
        schema.name
    );
    let mut vacuums = move || client.query_one(&vacuums, &[]).unwrap().get::<_, i64>(0);
    // 9,000 jobs: 18,000 dead row versions (a claim and a report each),
    // under the 20,000 that ask for a vacuum.
    complete_jobs(&store, "t", 9_000);
    assert_eq!(vacuums(), 0, "no vacuum before 20,000 dead row versions");
    // 2,000 more pass it: the vacuum thread runs one, once.
    complete_jobs(&store, "t", 2_000);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while vacuums() == 0 {
        assert!(std::time::Instant::now() < deadline, "no vacuum within 30 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(vacuums(), 1);
    // The jobs all ended, each once.
    assert_eq!(store.outcomes_after(0, 20_000).unwrap().len(), 11_000);
}

#[test]
fn sqlite_jobs_gates_locks_and_outcomes_survive_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("husk.db");
    let (queued, gated, running, ended);
    {
        let store = SqliteStore::open(&path, Durability::Normal).unwrap();
        ended = run_to_end(&store, "t", Outcome::BusinessStatus { value: "done".into() });
        running = store.enqueue(vec![job("t")], now()).unwrap()[0].id;
        let topics = ["t".to_owned()];
        let request = FetchRequest { worker: "w", topics: &topics, max: 1, lock_duration: Duration::from_secs(30) };
        assert_eq!(store.fetch_and_lock(request, now()).unwrap().jobs[0].id(), running);
        queued = store.enqueue(vec![job("t")], now()).unwrap()[0].id;
        gated = store
            .enqueue(vec![NewJob { not_before: Some(now() + Duration::from_secs(60)), ..job("t") }], now())
            .unwrap()[0]
            .id;
    }
    let store = SqliteStore::open(&path, Durability::Normal).unwrap();
    let state = |id| store.get(id).unwrap().unwrap().state;
    assert_eq!(state(queued), JobState::Queued);
    assert_eq!(state(gated), JobState::Gated);
    assert_eq!(state(running), JobState::Running);
    assert_eq!(state(ended), JobState::Terminal);
    // The lock taken before the restart expires and is reclaimed as an attempt.
    let topics = ["t".to_owned()];
    let request = FetchRequest { worker: "w2", topics: &topics, max: 10, lock_duration: Duration::from_secs(30) };
    let later = now() + Duration::from_secs(31);
    let fetched = store.fetch_and_lock(request, later).unwrap();
    assert_eq!(fetched.ended.len(), 1, "policy None: the expired attempt is the last");
    assert_eq!(fetched.ended[0].job_id, running);
    assert_eq!(fetched.jobs.iter().map(|j| j.id()).collect::<Vec<_>>(), vec![queued]);
    assert_eq!(store.outcomes_after(0, 10).unwrap().len(), 2);
}

#[test]
fn sqlite_refuses_garbage_and_newer_schemas_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.db");
    std::fs::write(&garbage, vec![0x42; 8192]).unwrap();
    let error = SqliteStore::open(&garbage, Durability::Normal).unwrap_err().to_string();
    assert!(error.contains("garbage.db") && !error.contains('\n'), "{error}");
    assert_eq!(std::fs::read(&garbage).unwrap(), vec![0x42; 8192], "nothing changed");

    let newer = dir.path().join("newer.db");
    drop(SqliteStore::open(&newer, Durability::Normal).unwrap());
    rusqlite::Connection::open(&newer).unwrap().execute_batch("PRAGMA user_version = 99").unwrap();
    let error = SqliteStore::open(&newer, Durability::Normal).unwrap_err().to_string();
    assert!(error.contains("newer.db") && error.contains("newer husk"), "{error}");
}

#[test]
#[cfg_attr(not(husk_postgres), ignore = "no PostgreSQL test server: run scripts/postgres start")]
fn postgres_refuses_a_newer_schema_naming_the_url_and_changes_nothing() {
    let Some(url) = crate::rig::pg::url() else { return };
    let schema = crate::rig::pg::TestSchema::new(url);
    let id = schema.open().enqueue(vec![job("t")], now()).unwrap()[0].id;
    let mut client = ::postgres::Client::connect(url, ::postgres::NoTls).unwrap();
    let set_version = format!("UPDATE {}.husk_meta SET value = 99 WHERE key = 'schema_version'", schema.name);
    client.batch_execute(&set_version).unwrap();
    let error = husk_postgres::PostgresStore::open(&schema.config()).unwrap_err().to_string();
    assert!(error.contains(&husk_postgres::redact_url(url)) && error.contains("newer husk"), "{error}");
    assert!(!error.contains('\n') && !error.contains(":husk@"), "one line, password redacted: {error}");
    let count = format!("SELECT count(*) FROM {}.husk_jobs WHERE id = $1", schema.name);
    assert_eq!(client.query_one(&count, &[&(id.0 as i64)]).unwrap().get::<_, i64>(0), 1, "the job is still there");
    let version = format!("SELECT value FROM {}.husk_meta WHERE key = 'schema_version'", schema.name);
    assert_eq!(client.query_one(&version, &[]).unwrap().get::<_, i64>(0), 99, "the version is untouched");
}

/// Makes `path` read-only for this process until dropped: immutable
/// (`chattr +i`, which holds even for root), else mode 0444 (which root
/// ignores). `None` when neither can be made to hold.
struct ReadOnly(std::path::PathBuf);

impl ReadOnly {
    fn make(path: &std::path::Path) -> Option<Self> {
        let chattr = std::process::Command::new("chattr").arg("+i").arg(path).status();
        if chattr.is_ok_and(|s| s.success()) {
            return Some(Self(path.to_owned()));
        }
        let mut permissions = std::fs::metadata(path).unwrap().permissions();
        permissions.set_readonly(true);
        std::fs::set_permissions(path, permissions).unwrap();
        // Root writes through 0444: then it is not read-only at all.
        std::fs::OpenOptions::new().append(true).open(path).is_err().then(|| Self(path.to_owned()))
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        let _ = std::process::Command::new("chattr").arg("-i").arg(&self.0).status();
    }
}

#[test]
fn sqlite_refuses_a_read_only_file_naming_it_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("husk.db");
    drop(SqliteStore::open(&path, Durability::Normal).unwrap().enqueue(vec![job("t")], now()).unwrap());
    let before = std::fs::read(&path).unwrap();
    let Some(_read_only) = ReadOnly::make(&path) else {
        eprintln!("skipped: this process can make no file read-only for itself (root without chattr)");
        return;
    };
    let error = SqliteStore::open(&path, Durability::Normal).unwrap_err().to_string();
    assert!(error.contains(&path.display().to_string()) && !error.contains('\n'), "{error}");
    assert!(error.contains("readonly") || error.contains("read-only"), "{error}");
    assert_eq!(std::fs::read(&path).unwrap(), before, "the file is unchanged");
}

#[test]
fn postgres_urls_are_redacted_wherever_the_password_is() {
    use husk_postgres::redact_url;
    assert_eq!(redact_url("postgres://husk:s3cret@db:5432/husk"), "postgres://husk:***@db:5432/husk");
    assert_eq!(
        redact_url("postgresql://husk@db/husk?password=s3cret&sslmode=disable"),
        "postgresql://husk@db/husk?password=***&sslmode=disable"
    );
    assert_eq!(
        redact_url("host=db user=husk password=s3cret dbname=husk"),
        "host=db user=husk password=*** dbname=husk"
    );
    assert_eq!(redact_url("postgres://db/husk"), "postgres://db/husk");
}

/// Kills the server-side sessions of the store opened on `url` with
/// `application_name`, and waits until they are gone.
fn kill_sessions(url: &str, application_name: &str) {
    let mut admin = ::postgres::Client::connect(url, ::postgres::NoTls).unwrap();
    let killed: i64 = admin
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1",
            &[&application_name],
        )
        .unwrap()
        .get(0);
    assert!(killed > 0, "the store had no session to kill");
    let since = std::time::Instant::now();
    let alive = "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1";
    while admin.query_one(alive, &[&application_name]).unwrap().get::<_, i64>(0) > 0 {
        assert!(since.elapsed() < Duration::from_secs(30), "the killed sessions never ended");
        std::thread::yield_now();
    }
}

#[test]
#[cfg_attr(not(husk_postgres), ignore = "no PostgreSQL test server: run scripts/postgres start")]
fn postgres_a_pooled_connection_killed_while_idle_fails_one_call_when_trusted_and_none_when_checked() {
    let Some(url) = crate::rig::pg::url() else { return };
    for trusted_idle in [Duration::from_secs(3600), Duration::ZERO] {
        let schema = crate::rig::pg::TestSchema::new(url);
        let config = husk_postgres::PostgresConfig {
            url: format!("{url}{}application_name={}", if url.contains('?') { '&' } else { '?' }, schema.name),
            trusted_idle,
            ..schema.config()
        };
        let store = husk_postgres::PostgresStore::open(&config).unwrap();
        // One call at a time: the pool holds one connection, just given back.
        store.enqueue(vec![job("t")], now()).unwrap();
        kill_sessions(url, &schema.name);
        let first = store.enqueue(vec![job("t")], now());
        if trusted_idle.is_zero() {
            assert!(first.is_ok(), "a checked connection is replaced before the call: {first:?}");
        } else {
            match first {
                Err(husk::store::StoreError::Unavailable { .. }) => {}
                other => panic!("a trusted dead connection fails its call as unavailable: {other:?}"),
            }
        }
        // The dead connection is dropped, not handed out again.
        store.enqueue(vec![job("t")], now()).expect("the next call gets a live connection");
        let count = format!("SELECT count(*) FROM {}.husk_jobs", schema.name);
        let mut admin = ::postgres::Client::connect(url, ::postgres::NoTls).unwrap();
        let written = admin.query_one(&count, &[]).unwrap().get::<_, i64>(0);
        assert_eq!(written, if trusted_idle.is_zero() { 3 } else { 2 }, "the failed call wrote nothing");
    }
}
