//! The backends the store conformance suite (`husk::conformance`)
//! and the dispatcher's property tests run on: the memory store, SQLite in a
//! temporary directory, PostgreSQL in a schema of its own per test, and a
//! store that is a queue and nothing more ([`CoreOnly`]).

use std::sync::Arc;
use std::time::SystemTime;

pub use husk::conformance::{Fresh, LOCK, Rig, rules};
use husk::outcome::TerminalOutcome;
use husk::store::{
    CancelResult, Depth, Enqueued, FetchRequest, Fetched, JobId, JobRecord, JobStore, Lock, MemoryStore, NewJob,
    Report, Reported, StoreError,
};
use husk_sqlite::{Durability, SqliteStore};

/// A fresh memory store.
pub fn memory() -> Fresh {
    Fresh::new(Arc::new(MemoryStore::new()), ())
}

/// A fresh store that implements [`JobStore`] alone: no listing, no
/// incidents, no pauses, no pruning, no kept versions, not shared.
pub fn core_only() -> Fresh {
    Fresh::new(Arc::new(CoreOnly(MemoryStore::new())), ())
}

/// A store written from the queue's contract alone: the memory store's
/// queue, with [`JobStore::supports`] left at its default (nothing).
pub struct CoreOnly(pub MemoryStore);

impl JobStore for CoreOnly {
    fn enqueue(&self, jobs: Vec<NewJob>, now: SystemTime) -> Result<Vec<Enqueued>, StoreError> {
        self.0.enqueue(jobs, now)
    }
    fn fetch_and_lock(&self, request: FetchRequest<'_>, now: SystemTime) -> Result<Fetched, StoreError> {
        self.0.fetch_and_lock(request, now)
    }
    fn report(&self, reports: Vec<(Lock, Report)>, now: SystemTime) -> Result<Vec<Reported>, StoreError> {
        self.0.report(reports, now)
    }
    fn extend_lock(&self, lock: Lock, until: SystemTime, now: SystemTime) -> Result<bool, StoreError> {
        self.0.extend_lock(lock, until, now)
    }
    fn cancel(&self, id: JobId, now: SystemTime) -> Result<CancelResult, StoreError> {
        self.0.cancel(id, now)
    }
    fn get(&self, id: JobId) -> Result<Option<JobRecord>, StoreError> {
        self.0.get(id)
    }
    fn outcomes_after(&self, after: u64, limit: usize) -> Result<Vec<TerminalOutcome>, StoreError> {
        self.0.outcomes_after(after, limit)
    }
    fn outcome_head(&self) -> Result<u64, StoreError> {
        self.0.outcome_head()
    }
    fn depths(&self) -> Result<Vec<(String, Depth)>, StoreError> {
        self.0.depths()
    }
}

/// A fresh SQLite store in a temporary directory.
pub fn sqlite() -> Fresh {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("husk.db"), Durability::Normal).unwrap();
    Fresh::new(Arc::new(store), dir)
}

/// A fresh PostgreSQL store in a schema of its own on the test server,
/// dropped with it.
pub fn postgres() -> Fresh {
    let url = pg::url().expect("a PostgreSQL test server (scripts/postgres start)");
    let schema = pg::TestSchema::new(url);
    Fresh::new(Arc::new(schema.open()), schema)
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
