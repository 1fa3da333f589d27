//! The backends the store conformance suite (`husk::store::conformance`)
//! and the dispatcher's property tests run on: the memory store, SQLite in a
//! temporary directory, PostgreSQL in a schema of its own per test.

use std::sync::Arc;

use husk::store::MemoryStore;
pub use husk::store::conformance::{Fresh, LOCK, Rig, rules};
use husk_sqlite::{Durability, SqliteStore};

/// A fresh memory store.
pub fn memory() -> Fresh {
    Fresh::new(Arc::new(MemoryStore::new()), ())
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
