//! A dispatcher on the in-memory store with a manual clock and a collecting
//! sink, for dispatcher tests: time moves only when a test moves it.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use husk::classify::{ErrorMapper, Rule, Rules};
use husk::clock::ManualClock;
use husk::dispatch::{Dispatcher, TopicPolicy};
use husk::fault::Fault;
use husk::outcome::{CollectingSink, Outcome, TerminalOutcome};
use husk::retry::RetryPolicySpec;
use husk::sandbox::Ending;
use husk::store::{FetchRequest, JobId, JobRecord, JobStore, LockedJob, MemoryStore, Reported};
use husk_sqlite::{Durability, SqliteStore};

/// Lock duration of every fetch in these tests.
pub const LOCK: Duration = Duration::from_secs(30);

/// A job store backend the conformance tests run against.
#[derive(Debug, Clone, Copy)]
pub enum Backend {
    Memory,
    Sqlite,
    /// The test server's URL (see [`postgres_url`]).
    Postgres(&'static str),
}

/// What keeps a test store's backing alive: a temp dir, or a PostgreSQL
/// schema dropped at the end.
#[expect(dead_code, reason = "held only to be dropped with the store")]
pub enum Backing {
    Dir(tempfile::TempDir),
    Schema(pg::TestSchema),
}

impl Backend {
    /// A fresh, empty store, and what must live as long as it.
    pub fn store(self) -> (Arc<dyn JobStore>, Option<Backing>) {
        match self {
            Backend::Memory => (Arc::new(MemoryStore::new()), None),
            Backend::Sqlite => {
                let dir = tempfile::tempdir().unwrap();
                let store = SqliteStore::open(&dir.path().join("husk.db"), Durability::Normal).unwrap();
                (Arc::new(store), Some(Backing::Dir(dir)))
            }
            Backend::Postgres(url) => {
                let schema = pg::TestSchema::new(url);
                (Arc::new(schema.open()), Some(Backing::Schema(schema)))
            }
        }
    }

    /// The PostgreSQL backend, or `None` (with a message) when no test
    /// server is configured. Under `CI=true` a missing server fails the
    /// test instead.
    pub fn postgres() -> Option<Backend> {
        pg::url().map(Backend::Postgres)
    }
}

/// The PostgreSQL test server: its URL and one schema per test.
pub mod pg {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU32, Ordering};

    use husk_postgres::{PostgresConfig, PostgresStore};

    /// The URL of the test server: `$HUSK_TEST_POSTGRES`, else the one
    /// `scripts/postgres start` wrote to `target/postgres/url`. `None`
    /// (the test is skipped, saying why) when neither exists; a panic
    /// under `CI=true`, where a missing server is a failure.
    pub fn url() -> Option<&'static str> {
        static URL: OnceLock<Option<String>> = OnceLock::new();
        let url = URL.get_or_init(|| {
            let url = std::env::var("HUSK_TEST_POSTGRES").ok().or_else(|| {
                let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/postgres/url");
                std::fs::read_to_string(file).ok().map(|s| s.trim().to_owned())
            });
            if url.is_none() {
                assert!(
                    std::env::var("CI").as_deref() != Ok("true"),
                    "CI=true but no PostgreSQL test server: run `scripts/postgres start` or set HUSK_TEST_POSTGRES"
                );
                // Straight to stderr: the test harness captures `eprintln!`
                // of passing tests, and this should be seen once.
                let _ = std::io::Write::write_all(
                    &mut std::io::stderr(),
                    b"PostgreSQL tests skipped: no server (run `scripts/postgres start`, or set HUSK_TEST_POSTGRES)\n",
                );
            }
            url.filter(|u| !u.is_empty())
        });
        url.as_deref()
    }

    /// A schema of its own for one test, dropped when the test ends.
    pub struct TestSchema {
        pub url: &'static str,
        pub name: String,
    }

    impl TestSchema {
        pub fn new(url: &'static str) -> Self {
            static NEXT: AtomicU32 = AtomicU32::new(0);
            let name = format!("t{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
            Self { url, name }
        }

        pub fn config(&self) -> PostgresConfig {
            PostgresConfig { schema: Some(self.name.clone()), pool_size: 8, ..PostgresConfig::new(self.url) }
        }

        pub fn open(&self) -> PostgresStore {
            PostgresStore::open(&self.config()).unwrap()
        }
    }

    impl Drop for TestSchema {
        fn drop(&mut self) {
            if let Ok(mut client) = postgres::Client::connect(self.url, postgres::NoTls) {
                let _ = client.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name));
            }
        }
    }
}

/// Generates, for each named test function taking a [`Backend`], one test
/// per backend: `memory::name`, `sqlite::name` and `postgres::name` (the
/// last skipped, saying so, without a test server).
macro_rules! conformance {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $( #[test] fn $name() { super::$name(crate::rig::Backend::Memory) } )*
        }
        mod sqlite {
            $( #[test] fn $name() { super::$name(crate::rig::Backend::Sqlite) } )*
        }
        mod postgres {
            $( #[test] fn $name() {
                if let Some(backend) = crate::rig::Backend::postgres() { super::$name(backend) }
            } )*
        }
    };
}
pub(crate) use conformance;

pub struct Rig {
    pub clock: ManualClock,
    pub sink: Arc<CollectingSink>,
    pub dispatcher: Arc<Dispatcher>,
    pub stop: AtomicBool,
    _backing: Option<Backing>,
}

impl Rig {
    /// A rig on `backend` with an engine-wide default retry policy (or none).
    pub fn on(backend: Backend, default_retry: Option<RetryPolicySpec>) -> Self {
        let clock = ManualClock::new();
        let sink = Arc::new(CollectingSink::new());
        let (store, dir) = backend.store();
        let dispatcher = Dispatcher::new(store, Arc::new(clock.clone()), sink.clone(), default_retry);
        Self { clock, sink, dispatcher, stop: AtomicBool::new(false), _backing: dir }
    }

    /// A rig on `backend` with one topic `t` using `retry` and no mapper.
    pub fn with_topic(backend: Backend, retry: RetryPolicySpec) -> Self {
        let rig = Self::on(backend, None);
        rig.dispatcher.set_topic("t", TopicPolicy { retry: Some(retry), mapper: None });
        rig
    }

    pub fn enqueue(&self, topic: &str) -> JobId {
        self.dispatcher.enqueue(topic, b"{}".to_vec()).unwrap()
    }

    /// Fetches without waiting.
    pub fn fetch(&self, topic: &str, max: usize) -> Vec<LockedJob> {
        let topics = [topic.to_owned()];
        let request = FetchRequest { worker: "w", topics: &topics, max, lock_duration: LOCK };
        self.dispatcher.fetch_and_lock(request, Duration::ZERO, &self.stop, None).unwrap()
    }

    /// Fetches exactly one job.
    pub fn fetch_one(&self, topic: &str) -> LockedJob {
        let mut jobs = self.fetch(topic, 1);
        assert_eq!(jobs.len(), 1, "expected one fetchable job");
        jobs.remove(0)
    }

    pub fn fail(&self, job: &LockedJob, code: &str) -> Reported {
        self.dispatcher.report(job, Ending::Fault(Fault::new(code, "")), Some("v1")).unwrap()
    }

    pub fn complete(&self, job: &LockedJob) -> Reported {
        self.dispatcher.report(job, Ending::Returned(b"\"done\"".to_vec()), Some("v1")).unwrap()
    }

    pub fn get(&self, id: JobId) -> JobRecord {
        self.dispatcher.store().get(id).unwrap().unwrap()
    }

    /// The outcomes delivered to the sink for `id`.
    pub fn outcomes_of(&self, id: JobId) -> Vec<TerminalOutcome> {
        self.sink.outcomes().into_iter().filter(|o| o.job_id == id).collect()
    }

    /// The one outcome delivered for `id`.
    pub fn outcome_of(&self, id: JobId) -> Outcome {
        let outcomes = self.outcomes_of(id);
        assert_eq!(outcomes.len(), 1, "expected exactly one outcome for job {id}: {outcomes:?}");
        outcomes[0].outcome.clone()
    }
}

/// A rules mapper from TOML-like rule values.
pub fn rules(rules: serde_json::Value) -> ErrorMapper {
    let rules: Vec<Rule> = serde_json::from_value(rules).unwrap();
    ErrorMapper::Rules(Rules::new(rules).unwrap())
}
