//! The `husk` command line: `husk run` runs one job, `husk compile`
//! precompiles a component, `husk demo` runs the built-in demo, `husk
//! serve` runs a config file's topics and the HTTP API; `husk enqueue`,
//! `jobs`, `job`, `cancel`, `incidents`, `retry`, `deploy`, `plugins`,
//! `rollback` and `outcomes` talk to a running server (tables by default,
//! `--json` for scripts).

mod remote;
mod run;
mod sdk;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};

use crate::client::Client;

use husk::capability::AllowedHost;
use husk::engine::{Engine, EngineConfig};
use husk::plugin::World;
use husk::sandbox::Sandbox;
use husk::store::{JobStore, MemoryStore};
use husk_sqlite::{Durability, SqliteStore};

/// Exit code of a failure of husk itself or of its input (bad path, not a
/// component, wrong world, bad JSON).
pub const EXIT_ERROR: u8 = 1;
/// Exit code of `husk run` when the guest returned a fault of its own.
pub const EXIT_GUEST_FAULT: u8 = 3;
/// Exit code of `husk run` when the host killed the job at a limit
/// (deadline, fuel, memory, stack, output size).
pub const EXIT_LIMIT_KILL: u8 = 4;
/// Exit code of `husk run` when the guest trapped (panic, `unreachable`...).
pub const EXIT_TRAP: u8 = 5;

/// husk: a WebAssembly plugin host for job-queue worker operations.
#[derive(Debug, Parser)]
#[command(name = "husk", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one job on a component and print its outcome as JSON; with
    /// `--mapper CODE`, classify a fault with an error mapper instead.
    ///
    /// Exit code: 0 completed (or classified), 3 guest fault, 4 killed at a
    /// limit, 5 trap, 1 bad input.
    Run(RunArgs),
    /// Precompile a component ahead of time with Cranelift.
    Compile(CompileArgs),
    /// Run 10,000 jobs across the example plugins and print a summary.
    Demo(DemoArgs),
    /// Run the topics of a config file and the HTTP API until SIGINT or
    /// SIGTERM, then shut down gracefully (running jobs get the grace
    /// period; the rest are released unspent).
    Serve(ServeArgs),
    /// Enqueue a job on a running server.
    Enqueue(EnqueueArgs),
    /// List jobs on a running server, newest first.
    Jobs(JobsArgs),
    /// Show one job: its state, attempts (with the plugin version of each)
    /// and outcome.
    Job(IdArgs),
    /// Cancel a job (a running one is killed at its next epoch tick).
    Cancel(IdArgs),
    /// List open incidents (jobs that failed for good).
    Incidents(IncidentsArgs),
    /// Retry an incident with a fresh attempt budget.
    Retry(IdArgs),
    /// Discard an incident: it ends for good and leaves the incident list.
    Discard(IdArgs),
    /// Deploy a new plugin version to a topic (hot swap: running jobs
    /// finish on the version they started on).
    Deploy(DeployArgs),
    /// List plugin versions (of one topic, or of every topic).
    Plugins(PluginsArgs),
    /// Make a topic's previous plugin version current again.
    Rollback(RollbackArgs),
    /// Print terminal outcomes after a cursor (long-polls for new ones).
    Outcomes(OutcomesArgs),
    /// List topics: current plugin version, live jobs, paused or not.
    Topics(RemoteArgs),
    /// Pause a topic on every process sharing the store: its jobs are not
    /// fetched (enqueues still land; running jobs finish).
    Pause(TopicArgs),
    /// Resume a paused topic.
    Resume(TopicArgs),
    /// Create a working operation project (Rust, Python, JavaScript, C or Go)
    /// from a template: `./build.sh`, then `husk run <name>.wasm`.
    New(NewArgs),
    /// Guest SDK tooling: the WIT contract, C bindings, and wrapping a core
    /// module into a component.
    Sdk(sdk::SdkArgs),
}

#[derive(Debug, Args)]
struct NewArgs {
    /// The project's name: lowercase letters, digits and `-`.
    name: String,
    /// The language.
    #[arg(long, value_enum, default_value = "rust")]
    lang: crate::scaffold::Lang,
    /// Where to create it (default: ./<name>).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// An operation that calls a service over `wasi:http` (Rust, Python,
    /// JavaScript).
    #[arg(long)]
    http: bool,
}

/// How to reach a running `husk serve`.
#[derive(Debug, Args)]
struct RemoteArgs {
    /// The server.
    #[arg(long, env = "HUSK_SERVER", default_value = "http://127.0.0.1:8080")]
    server: String,
    /// The tenant's API token.
    #[arg(long, env = "HUSK_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Print the API's JSON instead of a table.
    #[arg(long)]
    json: bool,
}

impl RemoteArgs {
    fn client(&self) -> Client {
        Client::new(&self.server, self.token.clone())
    }
}

#[derive(Debug, Args)]
struct EnqueueArgs {
    /// The topic.
    topic: String,
    /// The job's input: JSON text, or `@path` to read it from a file.
    #[arg(long, short, default_value = "{}")]
    input: String,
    /// An idempotency key: enqueueing the same key again returns the same
    /// job.
    #[arg(long)]
    key: Option<String>,
    /// Schedule the job: not to run before this time (RFC 3339, e.g.
    /// `2026-12-24T18:00:00Z`).
    #[arg(long, conflicts_with = "delay")]
    at: Option<String>,
    /// Schedule the job: not to run before this long from now (e.g. `10s`,
    /// `1h 30m`).
    #[arg(long)]
    delay: Option<String>,
    /// The job's priority within its topic, -100 to 100 (default 0): the
    /// highest priority's ready jobs run first.
    #[arg(long, allow_hyphen_values = true)]
    priority: Option<String>,
    /// Enqueue the jobs of a JSON Lines file instead, one per line, each as
    /// the batch endpoint takes it: `{"input": …, "key": "…", "run_at":
    /// "…", "delay": "…", "priority": 0}` (all but input optional); sent in
    /// batches of `--batch`, each one transaction.
    #[arg(long, conflicts_with_all = ["input", "key", "at", "delay", "priority"])]
    file: Option<PathBuf>,
    /// Jobs per request with `--file` (at most 10,000).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u16).range(1..=10_000))]
    batch: u16,
    #[command(flatten)]
    remote: RemoteArgs,
}

#[derive(Debug, Args)]
struct JobsArgs {
    /// Only this topic.
    #[arg(long)]
    topic: Option<String>,
    /// Only this state: queued, scheduled, retrying, running, completed,
    /// business-error, business-status, failed, discarded or cancelled.
    #[arg(long)]
    state: Option<String>,
    /// Only jobs that ended so: completed, business-error, business-status,
    /// failed or cancelled (a retried incident counts by its latest).
    #[arg(long)]
    outcome: Option<String>,
    /// Only jobs enqueued at or after this time (RFC 3339, e.g.
    /// 2026-12-07T08:30:00Z).
    #[arg(long)]
    enqueued_after: Option<String>,
    /// Only jobs enqueued before this time.
    #[arg(long)]
    enqueued_before: Option<String>,
    /// Only jobs whose last fault's code contains this text.
    #[arg(long)]
    fault_code: Option<String>,
    /// Only jobs older than this job: the next page.
    #[arg(long)]
    before: Option<u64>,
    /// At most this many (1 to 10,000).
    #[arg(long, default_value_t = 50)]
    limit: usize,
    #[command(flatten)]
    remote: RemoteArgs,
}

#[derive(Debug, Args)]
struct IncidentsArgs {
    /// Only this topic's.
    #[arg(long)]
    topic: Option<String>,
    #[command(flatten)]
    remote: RemoteArgs,
}

#[derive(Debug, Args)]
struct IdArgs {
    /// The job id.
    id: u64,
    #[command(flatten)]
    remote: RemoteArgs,
}

#[derive(Debug, Args)]
struct DeployArgs {
    /// The topic.
    topic: String,
    /// The component (`.wasm`).
    file: PathBuf,
    #[command(flatten)]
    remote: RemoteArgs,
}

#[derive(Debug, Args)]
struct PluginsArgs {
    /// Only this topic.
    topic: Option<String>,
    #[command(flatten)]
    remote: RemoteArgs,
}

#[derive(Debug, Args)]
struct TopicArgs {
    /// The topic.
    topic: String,
    #[command(flatten)]
    remote: RemoteArgs,
}

#[derive(Debug, Args)]
struct RollbackArgs {
    /// The topic.
    topic: String,
    /// The version to go back to (a digest or a prefix); default: the
    /// previous one.
    #[arg(long)]
    to: Option<String>,
    #[command(flatten)]
    remote: RemoteArgs,
}

#[derive(Debug, Args)]
struct OutcomesArgs {
    /// Outcomes after this cursor.
    #[arg(long, default_value_t = 0)]
    after: u64,
    /// How long to wait for one when there is none (e.g. `0s`, `30s`).
    #[arg(long, default_value = "0s")]
    wait: String,
    /// At most this many.
    #[arg(long, default_value_t = 100)]
    limit: usize,
    #[command(flatten)]
    remote: RemoteArgs,
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// The config file (see the commented `husk.toml` in the repository).
    #[arg(long, short, default_value = "husk.toml")]
    config: PathBuf,
    /// The API's address (overrides the file's `listen`; default
    /// 127.0.0.1:8080).
    #[arg(long)]
    listen: Option<String>,
    /// Deploy a topic's plugin again whenever its file changes (for
    /// development).
    #[arg(long)]
    watch: bool,
    /// Log one JSON object per line (for a log collector) instead of text.
    #[arg(long)]
    log_json: bool,
    #[command(flatten)]
    cache: CacheArgs,
}

#[derive(Debug, Args)]
struct DemoArgs {
    /// Do not show the progress bar.
    #[arg(long)]
    no_progress: bool,
    /// Where the demo's jobs live: a SQLite file, started afresh (its old
    /// contents are deleted), or `memory`.
    #[arg(long, default_value = "husk-data/demo.db")]
    store: String,
    #[command(flatten)]
    cache: CacheArgs,
}

#[derive(Debug, Args)]
struct RunArgs {
    /// The component (`.wasm`); a `.cwasm` from `husk compile` only with
    /// `--allow-precompiled`.
    component: PathBuf,
    /// The job's input: JSON text, or `@path` to read it from a file (with
    /// `--mapper`, the fault's body).
    #[arg(long, short)]
    input: String,
    /// The component is an error mapper: classify a fault of this code
    /// (its body the input), with a mapper's limits (100 ms, 10M fuel,
    /// 16 MiB), and print the classification.
    #[arg(long, value_name = "CODE", conflicts_with_all = ["fuel", "attempt", "allow_hosts", "config"])]
    mapper: Option<String>,
    /// Deadline after which the job is killed (e.g. `500ms`, `2s`).
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    timeout: Duration,
    /// Fuel budget (WebAssembly work units); unlimited when absent.
    #[arg(long)]
    fuel: Option<u64>,
    /// Memory cap of the instance (e.g. `64MiB`).
    #[arg(long, default_value = "64MiB")]
    memory: bytesize::ByteSize,
    /// The job's attempt number, as a retry would see it.
    #[arg(long, default_value_t = 1)]
    attempt: u32,
    /// The job's topic.
    #[arg(long, default_value = "cli")]
    topic: String,
    /// Accept a `.cwasm` precompiled by `husk compile`: machine code that
    /// runs with your rights, so only a file of your own that no one else
    /// can write. Without it, only a component is run.
    #[arg(long)]
    allow_precompiled: bool,
    /// Let the job call this host over `wasi:http`: `scheme://host[:port]`,
    /// `*.` for any subdomain (repeatable; default: no outbound HTTP).
    #[arg(long = "allow-host", value_name = "URL", value_parser = AllowedHost::parse)]
    allow_hosts: Vec<AllowedHost>,
    /// A config value the job reads through `wasi:config/store`
    /// (repeatable).
    #[arg(long = "config", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    config: Vec<(String, String)>,
    #[command(flatten)]
    cache: CacheArgs,
}

/// `KEY=VALUE`.
fn parse_key_value(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(format!("`{text}` is not KEY=VALUE")),
    }
}

#[derive(Debug, Args)]
struct CompileArgs {
    /// The component to compile.
    component: PathBuf,
    /// Where to write the compiled component (default: beside the input,
    /// with the extension `.cwasm`).
    #[arg(long, short)]
    output: Option<PathBuf>,
    /// Check that the component is a husk `operation` or `error-mapper`.
    #[arg(long, value_parser = parse_world)]
    world: Option<World>,
}

#[derive(Debug, Args)]
struct CacheArgs {
    /// Directory of the compile cache (default: `$HUSK_CACHE_DIR`, else
    /// `$XDG_CACHE_HOME/husk`, else `~/.cache/husk`).
    #[arg(long)]
    cache_dir: Option<PathBuf>,
    /// Do not read or write the compile cache.
    #[arg(long, conflicts_with = "cache_dir")]
    no_cache: bool,
}

impl CacheArgs {
    fn dir(&self) -> Option<PathBuf> {
        if self.no_cache {
            return None;
        }
        self.cache_dir.clone().or_else(default_cache_dir)
    }
}

/// The default compile cache directory.
pub fn default_cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("HUSK_CACHE_DIR") {
        return Some(dir.into());
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return Some(Path::new(&dir).join("husk"));
    }
    std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache").join("husk"))
}

fn parse_world(s: &str) -> Result<World, String> {
    match s {
        "operation" => Ok(World::Operation),
        "error-mapper" => Ok(World::ErrorMapper),
        _ => Err(format!("unknown world `{s}` (expected `operation` or `error-mapper`)")),
    }
}

/// Installs the `tracing` subscriber: to stderr, human-readable or one JSON
/// object per line, filtered by `RUST_LOG` (default: `default`, e.g.
/// `info`).
pub fn init_tracing(default: &str, json: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).try_init()
    };
}

impl Cli {
    /// The default log filter of the command: `husk demo` keeps guest logs
    /// (thousands of them) out of its summary.
    pub fn default_log_filter(&self) -> &'static str {
        match self.command {
            Command::Demo(_) => "warn,husk::guest=off",
            _ => "info",
        }
    }

    /// Whether logs are JSON lines (`husk serve --log-json`).
    pub fn log_json(&self) -> bool {
        matches!(&self.command, Command::Serve(args) if args.log_json)
    }

    /// Runs the command.
    ///
    /// # Errors
    ///
    /// A one-line error for bad input or a failure of husk itself.
    pub fn run(self) -> anyhow::Result<ExitCode> {
        match self.command {
            Command::Run(args) => run::run(args),
            Command::Compile(args) => compile(args),
            Command::Demo(args) => {
                let progress = !args.no_progress && std::io::IsTerminal::is_terminal(&std::io::stderr());
                let (store, name) = demo_store(&args.store)?;
                let report = crate::demo::run(args.cache.dir(), progress, store, name)?;
                print!("{}", report.table());
                Ok(ExitCode::SUCCESS)
            }
            Command::Enqueue(args) => remote::enqueue(&args),
            Command::Jobs(args) => remote::jobs(&args),
            Command::Job(args) => remote::job(&args),
            Command::Cancel(args) => remote::cancel(&args),
            Command::Incidents(args) => remote::incidents(&args),
            Command::Retry(args) => remote::incident(&args, "retry"),
            Command::Discard(args) => remote::incident(&args, "discard"),
            Command::Deploy(args) => remote::deploy(&args),
            Command::Plugins(args) => remote::plugins(&args),
            Command::Rollback(args) => remote::rollback(&args),
            Command::Outcomes(args) => remote::outcomes(&args),
            Command::Topics(args) => remote::topics(&args),
            Command::Pause(args) => remote::set_paused(&args, true),
            Command::Resume(args) => remote::set_paused(&args, false),
            Command::Sdk(args) => sdk::run(args),
            Command::New(args) => {
                let dir = args.dir.unwrap_or_else(|| PathBuf::from(&args.name));
                crate::scaffold::create(&args.name, args.lang, &dir, args.http)?;
                let lang = clap::ValueEnum::to_possible_value(&args.lang).map(|v| v.get_name().to_owned());
                println!(
                    "created {} ({}) in {}; build it with {}/build.sh",
                    args.name,
                    lang.unwrap_or_default(),
                    dir.display(),
                    dir.display()
                );
                Ok(ExitCode::SUCCESS)
            }
            Command::Serve(args) => {
                let options = husk_server::serve::ServeOptions {
                    config: args.config,
                    listen: args.listen,
                    watch: args.watch,
                    default_cache: args.cache.dir(),
                };
                husk_server::serve::run(&options)?;
                Ok(ExitCode::SUCCESS)
            }
        }
    }
}

/// The demo's store: `memory`, or a fresh SQLite file.
fn demo_store(store: &str) -> anyhow::Result<(std::sync::Arc<dyn JobStore>, String)> {
    if store == "memory" {
        return Ok((std::sync::Arc::new(MemoryStore::new()), "memory".into()));
    }
    let path = PathBuf::from(store);
    for suffix in ["", "-wal", "-shm"] {
        let file = PathBuf::from(format!("{store}{suffix}"));
        match std::fs::remove_file(&file) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                bail!("cannot start the demo afresh: cannot remove {}: {e}", file.display())
            }
            _ => {}
        }
    }
    let sqlite = SqliteStore::open(&path, Durability::Normal)?;
    Ok((std::sync::Arc::new(sqlite), format!("SQLite, {} (synchronous=NORMAL)", path.display())))
}

fn read_input(arg: &str) -> anyhow::Result<Vec<u8>> {
    let (bytes, what) = match arg.strip_prefix('@') {
        Some(path) => (std::fs::read(path).with_context(|| format!("cannot read input file {path}"))?, path),
        None => (arg.as_bytes().to_vec(), "--input"),
    };
    // Checked without building it: an input of any depth is valid, as the API takes it.
    if let Err(error) = serde_json::from_slice::<Box<serde_json::value::RawValue>>(&bytes) {
        bail!("{what} is not valid JSON: {error}");
    }
    Ok(bytes)
}

fn compile(args: CompileArgs) -> anyhow::Result<ExitCode> {
    let output = args.output.clone().unwrap_or_else(|| args.component.with_extension("cwasm"));
    let engine = Engine::new(EngineConfig::default().with_epoch_tick(None).with_max_instances(4))?;
    let bytes = std::fs::read(&args.component).with_context(|| format!("cannot read {}", args.component.display()))?;
    if let Some(world) = args.world {
        let sandbox = Sandbox::new(engine.clone())?;
        sandbox.load_bytes(&bytes, world, &args.component.display().to_string())?;
    }
    let started = Instant::now();
    let compiled = engine
        .precompile(&bytes)
        .map_err(|e| anyhow::anyhow!("{} cannot be compiled: {e:#}", args.component.display()))?;
    std::fs::write(&output, &compiled).with_context(|| format!("cannot write {}", output.display()))?;
    eprintln!(
        "compiled {} -> {} ({} bytes in {:.1} ms)",
        args.component.display(),
        output.display(),
        compiled.len(),
        started.elapsed().as_secs_f64() * 1e3
    );
    Ok(ExitCode::SUCCESS)
}
