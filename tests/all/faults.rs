//! Faults of the store itself, through the real binary: SQLite on a disk
//! that fills up (a small tmpfs the test mounts), and a PostgreSQL server
//! restarted mid-run (one of the test's own). Requests during the fault are
//! refused with 503 `store-unavailable` and a message saying why; nothing
//! is half-written; once the store is back everything goes on, every job
//! ends once.

use std::path::{Path, PathBuf};
use std::process::Command;

use husk_cli::client::ClientError;
use husk_server::tokens::token_hash;
use serde_json::{Value, json};

use crate::support::guest;
use crate::support_server::{Server, TOKEN_A, ended, enqueue, job_state};

/// A tmpfs of a given size, mounted on a temporary directory, unmounted
/// when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// `None` (the test is skipped, saying why) where mounting is not
    /// allowed; under `CI=true` that is a failure.
    fn mount(size: &str) -> Option<Self> {
        let dir = tempfile::tempdir().unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status();
        if !status.is_ok_and(|s| s.success()) {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true but a tmpfs cannot be mounted here");
            eprintln!("disk-full test skipped: cannot mount a tmpfs (needs root)");
            return None;
        }
        Some(Self { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn resize(&self, size: &str) {
        let status =
            Command::new("mount").args(["-o", &format!("remount,size={size}")]).arg(self.dir.path()).status().unwrap();
        assert!(status.success(), "resizing the tmpfs");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.dir.path()).status();
    }
}

fn config(store_lines: &str) -> String {
    format!(
        r#"{store_lines}
epoch_tick = "10ms"
shutdown_grace = "2s"

[tenants.a]
tokens = ["sha256:{hash}"]

[topics.t]
tenant = "a"
plugin = "{transform}"
workers = 2
fetch_batch = 4
lock_duration = "30s"
retry = {{ kind = "fixed", max_attempts = 20, delay = "100ms" }}

[topics.slow]
tenant = "a"
plugin = "{sleeper}"
workers = 2
lock_duration = "30s"
retry = {{ kind = "fixed", max_attempts = 20, delay = "100ms" }}
"#,
        hash = token_hash(TOKEN_A),
        transform = guest("transform").display(),
        sleeper = guest("sleeper").display(),
    )
}

/// Waits for every job to end, and checks each completed once.
fn check_all_completed(server: &Server, ids: &[Value]) {
    let a = server.client(Some(TOKEN_A));
    for id in ids {
        server.wait_until("the job ends", |_| ended(&job_state(&a, id)));
        let job = job_state(&a, id);
        assert_eq!(job["outcome"]["kind"], "completed", "job {id}: {job}");
    }
}

#[test]
fn sqlite_on_a_full_disk_refuses_enqueues_with_503_and_recovers_when_space_returns() {
    let Some(fs) = Tmpfs::mount("1m") else { return };
    let db: PathBuf = fs.path().join("husk.db");
    let server = Server::start(&config(&format!("store = \"{}\"", db.display())));
    let a = server.client(Some(TOKEN_A));
    let input = json!({ "name": "x".repeat(2_000), "amount": 1 });
    let mut accepted = Vec::new();
    let refused = loop {
        match enqueue(&a, "t", &input) {
            Ok(created) => accepted.push(created["id"].clone()),
            Err(error) => break error,
        }
        assert!(accepted.len() < 10_000, "a 1 MiB disk took 10,000 jobs");
    };
    let ClientError::Api { status, error, message } = refused else { panic!("{refused:?}") };
    assert_eq!((status, error.as_str()), (503, "store-unavailable"), "{message}");
    assert!(message.contains("full"), "the message says why: {message}");
    eprintln!("a full disk after {} jobs: 503 {message}", accepted.len());
    assert!(!accepted.is_empty());
    // The server still answers (reads are never failed by a failing
    // write's commit), and what it accepted is there.
    let health = a.get("/healthz");
    assert!(health.is_ok(), "{health:?}");
    for id in &accepted {
        assert!(a.get(&format!("/v1/jobs/{id}")).is_ok(), "accepted job {id} is kept");
    }

    fs.resize("64m");
    let mut after = None;
    server.wait_until("enqueues are taken again", |_| {
        after = enqueue(&a, "t", &input).ok().map(|created| created["id"].clone());
        after.is_some()
    });
    accepted.push(after.unwrap());
    check_all_completed(&server, &accepted);
    // Nothing half-written: the store holds exactly the accepted jobs.
    let listed = a.get("/v1/jobs?limit=10000").unwrap()["jobs"].as_array().unwrap().len();
    assert_eq!(listed, accepted.len());
    drop(server);
}

/// A PostgreSQL server of this test's own (the shared test server must not
/// go down under the other tests), stopped and removed when dropped.
struct OwnPostgres {
    env: Vec<(&'static str, String)>,
    url: String,
    _state: tempfile::TempDir,
}

impl OwnPostgres {
    fn try_script(env: &[(&'static str, String)], command: &str) -> Result<String, String> {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/postgres");
        let out = Command::new(script).arg(command).envs(env.iter().map(|(k, v)| (k, v))).output().unwrap();
        if out.status.success() {
            Ok(String::from_utf8(out.stdout).unwrap().trim().to_owned())
        } else {
            Err(format!("scripts/postgres {command}: {}", String::from_utf8_lossy(&out.stderr)))
        }
    }

    fn script(env: &[(&'static str, String)], command: &str) -> String {
        Self::try_script(env, command).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Starts on a port above Linux's ephemeral range (so no outgoing
    /// connection holds it, now or at the restart), trying another port
    /// when a listener of something else has this one.
    fn start() -> Self {
        let state = tempfile::tempdir().unwrap();
        let mut failures = Vec::new();
        for attempt in 0..5 {
            let port = 61_000 + (std::process::id() + attempt * 613) % 3_000;
            let env = vec![
                ("HUSK_PG_PORT", port.to_string()),
                // Not in a 0700 temporary directory: the server runs as `postgres`.
                ("HUSK_PG_DATA", format!("/tmp/husk-pg-fault-{port}")),
                ("HUSK_PG_STATE", state.path().display().to_string()),
            ];
            match Self::try_script(&env, "start") {
                Ok(url) => return Self { env, url, _state: state },
                Err(e) => {
                    Self::try_script(&env, "stop").ok();
                    failures.push(e);
                }
            }
        }
        panic!("no PostgreSQL server of the test's own started: {failures:#?}");
    }

    fn down(&self) {
        Self::script(&self.env, "down");
    }

    fn up(&self) {
        Self::script(&self.env, "up");
    }
}

impl Drop for OwnPostgres {
    fn drop(&mut self) {
        Self::script(&self.env, "stop");
    }
}

#[test]
#[cfg_attr(not(husk_postgres), ignore = "no PostgreSQL: run scripts/postgres start (it installs the server)")]
fn a_postgres_restart_mid_run_loses_and_duplicates_nothing() {
    if crate::rig::pg::url().is_none() {
        return;
    }
    let pg = OwnPostgres::start();
    // A process: its log counts the reconnects.
    let server = Server::process(&config(&format!("store = \"{}\"", pg.url)));
    let a = server.client(Some(TOKEN_A));
    // Jobs of 20 ms on two workers: about two seconds of work, running
    // when the server goes down.
    let input = json!({ "sleep_ms": 20 });
    let mut ids: Vec<Value> = (0..200).map(|_| enqueue(&a, "slow", &input).unwrap()["id"].clone()).collect();
    server.wait_until("the first job ends", |_| ended(&job_state(&a, &ids[0])));

    pg.down();
    // During the outage: refused, saying why.
    match enqueue(&a, "slow", &input) {
        Err(ClientError::Api { status, error, message }) => {
            assert_eq!((status, error.as_str()), (503, "store-unavailable"), "{message}");
        }
        other => panic!("an enqueue with the store down: {other:?}"),
    }
    pg.up();
    let mut after = None;
    server.wait_until("enqueues are taken again", |_| {
        after = enqueue(&a, "slow", &input).ok().map(|created| created["id"].clone());
        after.is_some()
    });
    ids.push(after.unwrap());
    check_all_completed(&server, &ids);

    // One outcome per job in the store's log: none lost, none twice.
    let store = husk_postgres::PostgresStore::open(&husk_postgres::PostgresConfig::new(pg.url.as_str())).unwrap();
    let log = husk::store::JobStore::outcomes_after(&store, 0, 100_000).unwrap();
    let mut ended: Vec<u64> = log.iter().map(|o| o.job_id.0).collect();
    ended.sort_unstable();
    let mut expected: Vec<u64> = ids.iter().map(|id| id.as_u64().unwrap()).collect();
    expected.sort_unstable();
    assert_eq!(ended, expected);
    let reconnects = server.log().matches("report failed; trying again").count();
    eprintln!("{} jobs across a PostgreSQL restart; {reconnects} reports tried again", ids.len());
    drop(server);
}
