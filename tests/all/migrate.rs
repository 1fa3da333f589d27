//! Schema upgrades: a database written by an old husk (schema 1, frozen in
//! `schema/`) is upgraded in place through every later migration when
//! opened, keeping its jobs and outcomes; their histories start empty.

use std::time::{Duration, SystemTime};

use husk::outcome::Outcome;
use husk::retry::RetryPolicySpec;
use husk::store::sql::SCHEMA_VERSION;
use husk::store::{
    AttemptRun, Enqueued, FetchRequest, JobId, JobState, JobStore, NewJob, Report, Reported, StoredVersion,
    VersionToKeep,
};
use husk::versions::{Origin, Stamp};
use husk_sqlite::{Durability, SqliteStore};

const SQLITE_1: &str = include_str!("schema/sqlite-1.sql");
const POSTGRES_1: &str = include_str!("schema/postgres-1.sql");

/// When the old husk enqueued (ms since the epoch).
const ENQUEUED_MS: i64 = 1_000_000_000;

fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(ENQUEUED_MS as u64) + Duration::from_secs(60)
}

fn policy() -> String {
    serde_json::to_string(&RetryPolicySpec::None).unwrap()
}

fn cancelled() -> String {
    serde_json::to_string(&Outcome::Cancelled).unwrap()
}

/// What the old husk left: job 1 queued, job 2 ended `Cancelled`.
const QUEUED: JobId = JobId(1);
const ENDED: JobId = JobId(2);

/// The upgraded store shows the old jobs without history, and works: keys
/// and histories are kept, topics pause.
fn check_upgraded(store: &dyn JobStore) {
    assert!(store.pauses().unwrap().set_paused("p", true).unwrap());
    assert_eq!(store.pauses().unwrap().paused().unwrap(), ["p"]);
    let versions = store.versions().unwrap();
    for (digest, secs) in [("v1", 1), ("v2", 2)] {
        let stamp = Stamp { origin: Origin::Deploy, by: None, at: now() + Duration::from_secs(secs) };
        let version = StoredVersion { digest: digest.into(), stamp };
        let put = VersionToKeep { topic: "t", version: &version, component: b"c", config: false, keep: 4 };
        versions.put_version(&put).unwrap();
    }
    let back = StoredVersion {
        digest: "v1".into(),
        stamp: Stamp { origin: Origin::Rollback, by: Some("a".into()), at: now() },
    };
    assert!(versions.set_current_version("t", &back).unwrap());
    let pointer = versions.current_version("t").unwrap().unwrap();
    assert_eq!((pointer.current.as_str(), pointer.rolled_back.and_then(|r| r.by).as_deref()), ("v1", Some("a")));
    let queued = store.get(QUEUED).unwrap().expect("the queued job is kept");
    assert_eq!((queued.state, queued.attempt, queued.attempts.len()), (JobState::Queued, 1, 0));
    let ended = store.get(ENDED).unwrap().expect("the ended job is kept");
    assert_eq!(ended.state, JobState::Terminal);
    assert_eq!(ended.outcome.map(|o| o.outcome), Some(Outcome::Cancelled));
    assert!(ended.attempts.is_empty());

    let keyed = NewJob {
        topic: "t".into(),
        input: b"{}".to_vec(),
        policy: RetryPolicySpec::None,
        not_before: None,
        key: Some("k".into()),
        keep_input: true,
        priority: 0,
    };
    let first = store.enqueue(vec![keyed.clone()], now()).unwrap()[0];
    assert!(first.created);
    assert!(first.id != QUEUED && first.id != ENDED, "a new id: {first:?}");
    assert_eq!(store.enqueue(vec![keyed], now()).unwrap(), vec![Enqueued { id: first.id, created: false }]);

    let topics = ["t".to_owned()];
    let request = FetchRequest { worker: "w", topics: &topics, max: 1, lock_duration: Duration::from_secs(30) };
    let job = store.fetch_and_lock(request, now()).unwrap().jobs.remove(0);
    assert_eq!((job.id(), job.priority), (QUEUED, 0), "the old job first, at the default priority");
    let done = Report::Completed {
        output: b"1".to_vec(),
        run: AttemptRun { plugin_version: Some("v2".into()), ..AttemptRun::default() },
    };
    assert!(matches!(store.report(vec![(job.lock, done)], now()).unwrap()[0], Reported::Ended(_)));
    assert_eq!(
        store.queries().unwrap().input(QUEUED).unwrap().as_deref(),
        Some(&b"{}"[..]),
        "a job enqueued before schema 7 keeps its input with its outcome"
    );
    let attempts = store.get(QUEUED).unwrap().unwrap().attempts;
    assert_eq!(
        attempts.iter().map(|a| (a.attempt, a.plugin_version.as_deref())).collect::<Vec<_>>(),
        [(1, Some("v2"))]
    );
    // Outcome seqs go on from the old ones (schema 4 moved PostgreSQL's
    // counter into a sequence).
    let seq = |id| store.get(id).unwrap().unwrap().outcome.unwrap().seq;
    let (old, new) = (seq(ENDED), seq(QUEUED));
    assert!(new > old, "{new} after {old}");
    assert_eq!(store.outcomes_after(old, 10).unwrap().iter().map(|o| o.seq).collect::<Vec<_>>(), [new]);
}

#[test]
fn sqlite_a_schema_1_file_is_upgraded_in_place_keeping_its_jobs() {
    // Schema 1 is upgraded through every later migration (2: histories and
    // keys; 3: paused topics; 4: the outcome sequence; 5: PostgreSQL's
    // enqueue function; 6: who rolled back; 7: inputs kept with outcomes;
    // 8: priorities), so this covers them all.
    assert_eq!(SCHEMA_VERSION, 8, "a new schema: check what it adds in `check_upgraded`");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("husk.db");
    {
        // As the old husk wrote it: schema 1, two jobs enqueued, the second
        // ended (its row moved to the outcomes).
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(SQLITE_1).unwrap();
        conn.execute_batch("PRAGMA user_version = 1").unwrap();
        for _ in 0..2 {
            conn.execute(
                "INSERT INTO jobs (topic, input, policy, attempt, state, enqueued_at) VALUES ('t', X'7b7d', ?1, 1, 0, ?2)",
                rusqlite::params![policy(), ENQUEUED_MS],
            )
            .unwrap();
        }
        conn.execute(
            "INSERT INTO outcomes (job_id, generation, topic, attempts, enqueued_at, finished_at, outcome, policy,
                                   open_incident)
             SELECT id, generation, topic, 0, enqueued_at, enqueued_at, ?2, policy, 0 FROM jobs WHERE id = ?1",
            rusqlite::params![ENDED.0 as i64, cancelled()],
        )
        .unwrap();
        conn.execute("DELETE FROM jobs WHERE id = ?1", [ENDED.0 as i64]).unwrap();
    }
    let store = SqliteStore::open(&path, Durability::Normal).unwrap();
    let version: i64 =
        rusqlite::Connection::open(&path).unwrap().query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    check_upgraded(&store);
    drop(store);
    // Opening an upgraded file again applies nothing twice.
    let store = SqliteStore::open(&path, Durability::Normal).unwrap();
    assert_eq!(store.get(QUEUED).unwrap().unwrap().attempts.len(), 1);
}

#[test]
#[cfg_attr(not(husk_postgres), ignore = "no PostgreSQL test server: run scripts/postgres start")]
fn postgres_a_schema_1_database_is_upgraded_in_place_keeping_its_jobs() {
    let Some(url) = crate::rig::pg::url() else { return };
    let schema = crate::rig::pg::TestSchema::new(url);
    {
        let mut client = ::postgres::Client::connect(url, ::postgres::NoTls).unwrap();
        let name = &schema.name;
        client.batch_execute(&format!("CREATE SCHEMA {name}; SET search_path = {name};")).unwrap();
        client.batch_execute(POSTGRES_1).unwrap();
        client.batch_execute("UPDATE husk_meta SET value = 1 WHERE key = 'schema_version'").unwrap();
        for _ in 0..2 {
            client
                .execute(
                    "INSERT INTO husk_jobs (topic, input, policy, attempt, state, enqueued_at)
                     VALUES ('t', '\\x7b7d', $1, 1, 0, $2)",
                    &[&policy(), &ENQUEUED_MS],
                )
                .unwrap();
        }
        client
            .execute(
                "INSERT INTO husk_outcomes (seq, job_id, generation, topic, attempts, enqueued_at, finished_at,
                                            outcome, policy, open_incident)
                 SELECT 1, id, generation, topic, 0, enqueued_at, enqueued_at, $2, policy, FALSE
                 FROM husk_jobs WHERE id = $1",
                &[&(ENDED.0 as i64), &cancelled()],
            )
            .unwrap();
        client
            .batch_execute(&format!(
                "DELETE FROM husk_jobs WHERE id = {}; UPDATE husk_meta SET value = 1 WHERE key = 'outcome_seq';",
                ENDED.0
            ))
            .unwrap();
    }
    let store = schema.open();
    let mut client = ::postgres::Client::connect(url, ::postgres::NoTls).unwrap();
    let version = format!("SELECT value FROM {}.husk_meta WHERE key = 'schema_version'", schema.name);
    assert_eq!(client.query_one(&version, &[]).unwrap().get::<_, i64>(0), SCHEMA_VERSION);
    check_upgraded(&store);
    drop(store);
    let store = schema.open();
    assert_eq!(store.get(QUEUED).unwrap().unwrap().attempts.len(), 1);
}
