//! The benches' PostgreSQL server: where it is, and dropping a run's schema.

/// The PostgreSQL test server's URL, if one runs: `$HUSK_TEST_POSTGRES`,
/// else the one `scripts/postgres start` wrote.
pub(crate) fn postgres_url() -> Option<String> {
    std::env::var("HUSK_TEST_POSTGRES").ok().or_else(|| {
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/postgres/url"))
            .ok()
            .map(|s| s.trim().to_owned())
    })
}

/// Drops a run's `schema`. The backends of `husk serve` processes just
/// killed may still be ending a statement on it, and a `DROP` meeting one
/// can be chosen as a deadlock's victim: it is tried again, a few times.
pub(crate) fn drop_schema(url: &str, schema: &str) {
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let drop = format!("DROP SCHEMA IF EXISTS {schema} CASCADE");
    for tries_left in (0..5).rev() {
        match client.batch_execute(&drop) {
            Ok(()) => return,
            Err(error) if tries_left > 0 => {
                eprintln!("dropping {schema}: {error}; trying again");
                std::thread::sleep(std::time::Duration::from_millis(500));
            }
            Err(error) => panic!("dropping {schema}: {error}"),
        }
    }
}
