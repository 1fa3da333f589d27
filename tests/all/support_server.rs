//! The test server: husk serving the API and the dashboard on a free port,
//! inside the test process or as a `husk serve` process; the example
//! tenants' tokens, the config it serves, and helpers to call it.

use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use husk_cli::client::{Client, ClientError};
use husk_server::serve::{ServeOptions, Stop};
use husk_server::tokens::token_hash;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::support::guest;

pub const TOKEN_A: &str = "token-of-tenant-a";
/// Tenant b's token, its `env:` reference read from `HUSK_TEST_TOKEN_B`
/// (set for every cargo command by `.cargo/config.toml`).
pub const TOKEN_B: &str = env!("HUSK_TEST_TOKEN_B");
pub const TOKEN_Q: &str = "token-of-tenant-q";

/// A husk serving the API on a free port, stopped (as by SIGTERM) when
/// dropped: inside the test process ([`Server::start`]: for what is tested
/// through HTTP), or as a `husk serve` process ([`Server::process`]: for
/// signals, kill -9, its log, and several processes on one store).
pub struct Server {
    run: Run,
    pub url: String,
    pub dir: tempfile::TempDir,
}

/// Where a [`Server`] runs.
enum Run {
    /// A `husk serve` child process.
    Process(Child),
    /// `husk_server::serve::serve` on a thread of the test process; `stop`
    /// is its stop (taken when it stops).
    InProcess { stop: Option<oneshot::Sender<()>>, thread: Option<JoinHandle<anyhow::Result<()>>> },
}

impl Server {
    /// Serves `config` (written to a temp dir, where its SQLite store lives
    /// too) inside the test process, as `husk serve --no-cache` would;
    /// returns once the API is bound. Tenant b's `env:` token is the
    /// variable `HUSK_TEST_TOKEN_B`, which `.cargo/config.toml` sets.
    pub fn start(config: &str) -> Self {
        Self::start_in(tempfile::tempdir().unwrap(), config)
    }

    /// [`Server::start`] in `dir` (a store left there by a server before).
    pub fn start_in(dir: tempfile::TempDir, config: &str) -> Self {
        let path = dir.path().join("husk.toml");
        std::fs::write(&path, config).unwrap();
        let options =
            ServeOptions { config: path, listen: Some("127.0.0.1:0".into()), watch: false, default_cache: None };
        let (stop, stopped) = oneshot::channel();
        let (ready, bound) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            husk_server::serve::serve(&options, Stop::When(stopped), move |address| {
                let _ = ready.send(address);
            })
        });
        let Ok(address) = bound.recv() else {
            // It stopped before it served: its error says why.
            panic!("husk did not start: {:?}", thread.join().unwrap().err());
        };
        let run = Run::InProcess { stop: Some(stop), thread: Some(thread) };
        Server { run, url: format!("http://{address}"), dir }
    }

    /// Starts a `husk serve` process on `config` (written to a temp dir,
    /// where its SQLite store lives too), with the env var
    /// `HUSK_TEST_TOKEN_B` set to tenant b's token; waits for `/healthz`.
    pub fn process(config: &str) -> Self {
        Self::process_in(tempfile::tempdir().unwrap(), config, &[])
    }

    /// [`Server::process`] in `dir`, with more arguments.
    pub fn process_in(dir: tempfile::TempDir, config: &str, args: &[&str]) -> Self {
        Self::start_logging(dir, config, args, "info,husk::guest=off")
    }

    /// [`Server::process_in`] with the log filter `rust_log`.
    pub fn start_logging(dir: tempfile::TempDir, config: &str, args: &[&str], rust_log: &str) -> Self {
        let path = dir.path().join("husk.toml");
        std::fs::write(&path, config).unwrap();
        let log = std::fs::File::create(dir.path().join("serve.log")).unwrap();
        // Port 0: the server binds a free port itself and logs it (a port
        // probed here and passed on could be taken by then).
        let mut child = Command::new(env!("CARGO_BIN_EXE_husk"))
            .args(["serve", "--no-cache", "--listen", "127.0.0.1:0", "--config"])
            .arg(&path)
            .args(args)
            .env("RUST_LOG", rust_log)
            .env("HUSK_TEST_TOKEN_B", TOKEN_B)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let read_log = || std::fs::read_to_string(dir.path().join("serve.log")).unwrap_or_default();
        let started = Instant::now();
        let url = loop {
            let log = read_log();
            if let Some((_, rest)) = log.split_once("husk serving on ") {
                break rest.split_whitespace().next().unwrap().to_owned();
            }
            if let Some(status) = child.try_wait().unwrap() {
                panic!("husk serve exited ({status}) before serving:\n{log}");
            }
            assert!(started.elapsed() < Duration::from_secs(60), "husk serve did not start:\n{log}");
            std::thread::sleep(Duration::from_millis(20));
        };
        let server = Server { run: Run::Process(child), url, dir };
        server.wait_until("/healthz answers", |s| s.client(None).get("/healthz").is_ok());
        server
    }

    pub fn client(&self, token: Option<&str>) -> Client {
        Client::new(&self.url, token.map(str::to_owned))
    }

    /// Polls `condition` every 20 ms for up to 60 s.
    pub fn wait_until(&self, what: &str, mut condition: impl FnMut(&Self) -> bool) {
        let started = Instant::now();
        while !condition(self) {
            assert!(started.elapsed() < Duration::from_secs(60), "gave up waiting: {what}\n{}", self.log());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The process's log (its stderr); an in-process server has none of
    /// its own.
    pub fn log(&self) -> String {
        match self.run {
            Run::Process(_) => std::fs::read_to_string(self.dir.path().join("serve.log")).unwrap_or_default(),
            Run::InProcess { .. } => "(served in the test process: no log of its own)".into(),
        }
    }

    fn child(&mut self) -> &mut Child {
        match &mut self.run {
            Run::Process(child) => child,
            Run::InProcess { .. } => panic!("only a server started with Server::process is a process"),
        }
    }

    /// Stops the server as SIGTERM does and waits until it has (it must stop
    /// cleanly); returns its directory, with its store.
    pub fn stop(mut self) -> tempfile::TempDir {
        if matches!(self.run, Run::Process(_)) {
            let (status, dir) = self.terminate();
            assert!(status.success(), "husk serve stopped with {status}");
            return dir;
        }
        // Dropped on return, an in-process server stops and is checked to
        // have stopped cleanly (see `Drop`).
        std::mem::replace(&mut self.dir, tempfile::tempdir().unwrap())
    }

    /// Kills the process with SIGKILL (no shutdown at all).
    pub fn kill9(mut self) {
        self.child().kill().unwrap();
        self.child().wait().unwrap();
    }

    /// Sends SIGTERM and waits for the process to exit, for at most 60 s
    /// (then it is killed and the test fails); returns its exit status and
    /// its directory.
    pub fn terminate(mut self) -> (std::process::ExitStatus, tempfile::TempDir) {
        let pid = self.child().id();
        let _ = Command::new("kill").args(["-TERM", &pid.to_string()]).status();
        let started = Instant::now();
        let status = loop {
            if let Some(status) = self.child().try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > Duration::from_secs(60) {
                let _ = self.child().kill();
                panic!("husk serve still runs 60 s after SIGTERM:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let dir = std::mem::replace(&mut self.dir, tempfile::tempdir().unwrap());
        (status, dir)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        match &mut self.run {
            Run::Process(child) => {
                if matches!(child.try_wait(), Ok(None)) {
                    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
                }
                let _ = child.wait();
            }
            Run::InProcess { stop, thread } => {
                drop(stop.take());
                if let Some(thread) = thread.take() {
                    let stopped = thread.join();
                    // A test that failed already says why; one that passed
                    // must not hide a server that did not stop cleanly.
                    if !std::thread::panicking() {
                        stopped.expect("the server's thread panicked").expect("the server stopped cleanly");
                    }
                }
            }
        }
    }
}

/// Tenants a (a `sha256:` token), b (an `env:` token) and q (max_queued 3),
/// each with topics of its own.
pub fn config() -> String {
    format!(
        r#"store = "husk.db"
epoch_tick = "10ms"
shutdown_grace = "2s"
max_input_size = "1KiB"
max_plugin_size = "4MiB"

[tenants.a]
tokens = ["sha256:{hash_a}"]
max_memory = "64MiB"

[tenants.b]
tokens = ["env:HUSK_TEST_TOKEN_B"]

[tenants.q]
tokens = ["sha256:{hash_q}"]
max_queued = 3

[topics.a-quote]
tenant = "a"
plugin = "{quote_v1}"
workers = 1
retry = {{ kind = "none" }}

[topics.a-spin]
tenant = "a"
plugin = "{spin}"
workers = 1
deadline = "30s"
retry = {{ kind = "none" }}

[topics.b-flaky]
tenant = "b"
plugin = "{flaky}"
workers = 1
retry = {{ kind = "none" }}

[topics.q-flaky]
tenant = "q"
plugin = "{flaky}"
workers = 1
retry = {{ kind = "fixed", max_attempts = 5, delay = "1h" }}
"#,
        hash_a = token_hash(TOKEN_A),
        hash_q = token_hash(TOKEN_Q),
        quote_v1 = guest("quote-v1").display(),
        flaky = guest("flaky").display(),
        spin = guest("spin").display(),
    )
}

/// The refusal of a call that must fail: (status, error kind).
pub fn refusal(result: Result<Value, ClientError>) -> (u16, String) {
    match result {
        Err(ClientError::Api { status, error, message }) => {
            assert!(!message.is_empty(), "a refusal says why ({status} {error})");
            (status, error)
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

pub fn enqueue(client: &Client, topic: &str, input: &Value) -> Result<Value, ClientError> {
    client.post(&format!("/v1/topics/{topic}/jobs"), Some((input.to_string().as_bytes(), "application/json")), &[])
}

pub fn job_state(client: &Client, id: &Value) -> Value {
    client.get(&format!("/v1/jobs/{id}")).unwrap()
}

/// Whether a job (as the API shows it) has ended.
pub fn ended(job: &Value) -> bool {
    ["completed", "business-error", "business-status", "failed", "cancelled"]
        .contains(&job["state"].as_str().unwrap_or(""))
}
