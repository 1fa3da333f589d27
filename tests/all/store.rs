//! The store contract on every backend: outcome log and cursor, depths,
//! listing; retention (memory) and reopening the file (SQLite).

use std::time::{Duration, SystemTime};

use husk_host::fault::Fault;
use husk_host::outcome::Outcome;
use husk_host::retry::RetryPolicySpec;
use husk_host::store::{
    CancelResult, Durability, FetchRequest, JobId, JobState, JobStore, ListFilter, MemoryStore, NewJob, Report,
    Reported, SqliteStore,
};

use crate::rig::{Backend, conformance};

const T0: Duration = Duration::from_secs(1_000_000);

fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + T0
}

fn job(topic: &str) -> NewJob {
    NewJob { topic: topic.into(), input: b"{}".to_vec(), policy: RetryPolicySpec::None, not_before: None }
}

fn run_to_end(store: &dyn JobStore, topic: &str, outcome: Outcome) -> JobId {
    let id = store.enqueue(vec![job(topic)], now()).unwrap()[0];
    let topics = [topic.to_owned()];
    let request = FetchRequest { worker: "w", topics: &topics, max: 1, lock_duration: Duration::from_secs(30) };
    let fetched = store.fetch_and_lock(request, now()).unwrap();
    let lock = fetched.jobs[0].lock;
    assert!(matches!(store.report(vec![(lock, Report::End(outcome))], now()).unwrap()[0], Reported::Ended(_)));
    id
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

fn outcome_log_is_ordered_and_resumable_by_cursor(backend: Backend) {
    let (store, _dir) = backend.store();
    let store = store.as_ref();
    let ids: Vec<JobId> =
        (0..5).map(|_| run_to_end(store, "t", Outcome::BusinessStatus { value: "s".into() })).collect();
    let all = store.outcomes_after(0, 100).unwrap();
    assert_eq!(all.iter().map(|o| o.job_id).collect::<Vec<_>>(), ids);
    assert!(all.windows(2).all(|w| w[0].seq < w[1].seq));
    let rest = store.outcomes_after(all[1].seq, 2).unwrap();
    assert_eq!(rest.iter().map(|o| o.job_id).collect::<Vec<_>>(), ids[2..4]);
    assert!(store.outcomes_after(all[4].seq, 10).unwrap().is_empty());
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
    assert_eq!(store.incidents().unwrap().len(), 1);
    assert_eq!(store.outcomes_after(0, 10).unwrap().len(), 2);
}

fn depths_and_listing_follow_job_states(backend: Backend) {
    let (store, _dir) = backend.store();
    let ids = store.enqueue(vec![job("a"), job("a"), job("b")], now()).unwrap();
    let gated = NewJob { not_before: Some(now() + Duration::from_secs(5)), ..job("b") };
    let gated_id = store.enqueue(vec![gated], now()).unwrap()[0];
    let topics = ["a".to_owned()];
    let request = FetchRequest { worker: "w", topics: &topics, max: 1, lock_duration: Duration::from_secs(30) };
    store.fetch_and_lock(request, now()).unwrap();
    let depths: std::collections::HashMap<_, _> = store.depths().unwrap().into_iter().collect();
    assert_eq!((depths["a"].queued, depths["a"].running, depths["a"].gated), (1, 1, 0));
    assert_eq!((depths["b"].queued, depths["b"].gated), (1, 1));
    assert!(matches!(store.cancel(ids[2], now()).unwrap(), CancelResult::Cancelled(_)));
    let depths: std::collections::HashMap<_, _> = store.depths().unwrap().into_iter().collect();
    assert_eq!(depths["b"].queued, 0);

    let listed = store.list(&ListFilter { topic: Some("b".into()), ..ListFilter::default() }).unwrap();
    assert_eq!(listed.iter().map(|r| r.id).collect::<Vec<_>>(), vec![gated_id, ids[2]], "newest first");
    let gated_only = store.list(&ListFilter { state: Some(JobState::Gated), ..ListFilter::default() }).unwrap();
    assert_eq!(gated_only.iter().map(|r| r.id).collect::<Vec<_>>(), vec![gated_id]);
    assert_eq!(store.list(&ListFilter { limit: Some(2), ..ListFilter::default() }).unwrap().len(), 2);
}

fn release_requeues_on_the_same_attempt_unless_a_cancel_was_asked(backend: Backend) {
    let (store, _dir) = backend.store();
    let ids = store.enqueue(vec![job("t"), job("t")], now()).unwrap();
    let topics = ["t".to_owned()];
    let request = FetchRequest { worker: "w", topics: &topics, max: 2, lock_duration: Duration::from_secs(30) };
    let fetched = store.fetch_and_lock(request, now()).unwrap().jobs;
    assert_eq!(fetched.len(), 2);
    assert_eq!(store.cancel(ids[1], now()).unwrap(), CancelResult::Cancelling);
    let reports = fetched.iter().map(|j| (j.lock, Report::Release)).collect();
    let results = store.report(reports, now()).unwrap();
    assert_eq!(results[0], Reported::Released);
    assert!(matches!(&results[1], Reported::Ended(o) if o.outcome == Outcome::Cancelled && o.attempts == 1));
    let released = store.get(ids[0]).unwrap().unwrap();
    assert_eq!((released.state, released.attempt, released.lock), (JobState::Queued, 1, None));
    let again = store.fetch_and_lock(request, now()).unwrap().jobs;
    assert_eq!(again.iter().map(|j| (j.id(), j.attempt)).collect::<Vec<_>>(), vec![(ids[0], 1)]);
    let stale = store.report(vec![(fetched[0].lock, Report::Release)], now()).unwrap();
    assert_eq!(stale, vec![Reported::LockLost], "an old lock cannot release the job again");
}

conformance! {
    outcome_log_is_ordered_and_resumable_by_cursor,
    depths_and_listing_follow_job_states,
    release_requeues_on_the_same_attempt_unless_a_cancel_was_asked,
}

#[test]
fn sqlite_jobs_gates_locks_and_outcomes_survive_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("husk.db");
    let (queued, gated, running, ended);
    {
        let store = SqliteStore::open(&path, Durability::Normal).unwrap();
        ended = run_to_end(&store, "t", Outcome::BusinessStatus { value: "done".into() });
        running = store.enqueue(vec![job("t")], now()).unwrap()[0];
        let topics = ["t".to_owned()];
        let request = FetchRequest { worker: "w", topics: &topics, max: 1, lock_duration: Duration::from_secs(30) };
        assert_eq!(store.fetch_and_lock(request, now()).unwrap().jobs[0].id(), running);
        queued = store.enqueue(vec![job("t")], now()).unwrap()[0];
        gated = store
            .enqueue(vec![NewJob { not_before: Some(now() + Duration::from_secs(60)), ..job("t") }], now())
            .unwrap()[0];
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
fn postgres_refuses_a_newer_schema_naming_the_url_and_changes_nothing() {
    let Some(url) = crate::rig::pg::url() else { return };
    let schema = crate::rig::pg::TestSchema::new(url);
    let id = schema.open().enqueue(vec![job("t")], now()).unwrap()[0];
    let mut client = ::postgres::Client::connect(url, ::postgres::NoTls).unwrap();
    let set_version = format!("UPDATE {}.husk_meta SET value = 99 WHERE key = 'schema_version'", schema.name);
    client.batch_execute(&set_version).unwrap();
    let error = husk_host::store::PostgresStore::open(&schema.config()).unwrap_err().to_string();
    assert!(error.contains(&husk_host::store::redact_url(url)) && error.contains("newer husk"), "{error}");
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
    use husk_host::store::redact_url;
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
