//! `husk serve`: the dispatcher, the worker pools of every topic in a config
//! file and the HTTP API in one process, until SIGINT or SIGTERM (or, served
//! inside another program, until it says stop); then a graceful shutdown.
//! With `--watch`, a topic's plugin file that changes is deployed as a new
//! version.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;

use crate::api::{Api, BodyLimits, OutcomeFeed};
use crate::config::{Config, ConfigError, KeyError};
use crate::metrics::Metrics;
use crate::tokens::Tenants;
use crate::tokens::TokenRef;
use husk::host::{Host, PluginSource};
use husk::outcome::{OutcomeSink, TerminalOutcome};
use husk::quota::Quota;
use husk::versions::Origin;

/// How long open requests may take to finish after SIGTERM or SIGINT
/// before the API stops without them.
const CONNECTIONS_DRAIN: Duration = Duration::from_secs(5);

/// How often `--watch` looks at the plugin files.
const WATCH_EVERY: Duration = Duration::from_millis(500);

/// What `husk serve` was asked to do.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The config file.
    pub config: PathBuf,
    /// Overrides the file's `listen`.
    pub listen: Option<String>,
    /// Redeploy a topic's plugin when its file changes.
    pub watch: bool,
    /// The compile cache directory unless the file sets one.
    pub default_cache: Option<PathBuf>,
}

/// Logs each terminal outcome at `debug` (target `husk::outcome`).
#[derive(Debug)]
struct LogSink;

impl OutcomeSink for LogSink {
    fn deliver(&self, outcome: &TerminalOutcome) {
        tracing::debug!(
            target: "husk::outcome",
            job = %outcome.job_id,
            topic = %outcome.topic,
            attempts = outcome.attempts,
            outcome = outcome.outcome.kind(),
            seq = outcome.seq,
            "terminal outcome"
        );
    }
}

/// Hands each outcome to several sinks.
struct FanOut(Vec<Arc<dyn OutcomeSink>>);

impl OutcomeSink for FanOut {
    fn deliver(&self, outcome: &TerminalOutcome) {
        self.0.iter().for_each(|sink| sink.deliver(outcome));
    }
}

/// The tenants' token hashes, reading `env:` references now.
fn tenants(config: &Config, file: &Path) -> Result<Tenants, ConfigError> {
    let resolve = |key: String, token: &str| {
        TokenRef::parse(token).and_then(|t| t.resolve()).map_err(|reason| ConfigError::Invalid {
            file: file.to_owned(),
            error: KeyError { key, reason: reason.to_string() },
        })
    };
    let (mut hashes, mut read_only) = (Vec::new(), Vec::new());
    for (name, tenant) in &config.tenants {
        for (i, token) in tenant.tokens.iter().enumerate() {
            hashes.push((resolve(format!("tenants.{name}.tokens[{i}]"), token)?, name.clone()));
        }
        for (i, token) in tenant.read_tokens.iter().enumerate() {
            read_only.push((resolve(format!("tenants.{name}.read_tokens[{i}]"), token)?, name.clone()));
        }
    }
    let operators = config
        .operator_tokens
        .iter()
        .enumerate()
        .map(|(i, token)| resolve(format!("operator_tokens[{i}]"), token))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Tenants::new(hashes).with_viewers(read_only, operators))
}

/// What tells a served husk to stop.
#[derive(Debug)]
pub enum Stop {
    /// SIGINT or SIGTERM (`husk serve`); the handlers are installed before
    /// any worker starts.
    Signals,
    /// A value on this channel, or its sender dropped: husk served inside
    /// another program (the tests run most of the API's this way).
    When(tokio::sync::oneshot::Receiver<()>),
}

/// Runs husk as configured until SIGINT or SIGTERM.
///
/// # Errors
///
/// A one-line error for a bad config file, store, plugin or listen address
/// (nothing is started then), or when the signal handlers cannot be
/// installed.
pub fn run(options: &ServeOptions) -> anyhow::Result<()> {
    serve(options, Stop::Signals, |_| ())
}

/// Runs husk as configured until `stop`, then shuts down as after a
/// signal. `ready` gets the API's address once it is bound and every topic
/// started, before the first request is answered.
///
/// # Errors
///
/// As [`run`].
pub fn serve(options: &ServeOptions, stop: Stop, ready: impl FnOnce(SocketAddr)) -> anyhow::Result<()> {
    let config_path = &options.config;
    let config = Config::load(config_path)?;
    let base = config_path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let tenants = tenants(&config, config_path)?;
    let listen = options.listen.clone().unwrap_or_else(|| config.listen().to_owned());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("husk-api")
        .enable_all()
        .build()
        .context("starting the runtime")?;
    // Bound before anything starts: a taken port fails at once.
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(&listen))
        .with_context(|| format!("cannot listen on {listen}"))?;
    let address = listener.local_addr().context("reading the listen address")?;
    // Before any worker starts: a SIGTERM that arrived between the first
    // claim and the handler would kill the process with jobs still locked.
    let stop = match stop {
        Stop::Signals => {
            let _runtime = runtime.enter();
            StopSource::Signals(Signals::install()?)
        }
        Stop::When(receiver) => StopSource::Channel(receiver),
    };
    let store = config.open_store(base)?;
    let metrics = Arc::new(Metrics::new());
    let feed = Arc::new(OutcomeFeed::new());
    let sink = FanOut(vec![Arc::new(LogSink), metrics.clone(), feed.clone()]);
    let mut builder = Host::builder()
        .store(store)
        .engine(config.engine(base, options.default_cache.clone()))
        .sink(Arc::new(sink))
        .observer(metrics.clone());
    if let Some(retry) = config.retry {
        builder = builder.default_retry(retry);
    }
    let invalid = |error| crate::config::ConfigError::Invalid { file: config_path.to_owned(), error };
    if let Some(faults) = config.permanent_faults().map_err(invalid)? {
        builder = builder.permanent_faults(faults);
    }
    if let Some(keep) = config.kept_versions {
        builder = builder.kept_versions(keep);
    }
    builder = builder.retention(config.retention.retention());
    if let Some(every) = config.retention.every {
        builder = builder.prune_every(every.max(Duration::from_millis(10)));
    }
    for (name, tenant) in &config.tenants {
        builder = builder.quota(
            name,
            Quota::default().with_max_concurrent(tenant.max_concurrent).with_max_queued(tenant.max_queued),
        );
    }
    let topics = config.topics(base).map_err(invalid)?;
    for topic in topics {
        builder = builder.topic(topic);
    }
    let started = Instant::now();
    let host = Arc::new(builder.build()?);
    let limits =
        BodyLimits { input: config.max_input_size(), plugin: config.max_plugin_size(), batch: config.max_batch_size() };
    let api = Arc::new(Api::new(host.clone(), tenants, metrics, feed.clone(), limits));
    let stop_watch = Arc::new(AtomicBool::new(false));
    let watcher = options.watch.then(|| watch(host.clone(), &config, base, stop_watch.clone()));
    tracing::info!(
        config = %config_path.display(),
        store = config.store.as_deref().unwrap_or(crate::config::DEFAULT_STORE),
        topics = config.topics.len(),
        tenants = config.tenants.len(),
        listen = %address,
        pid = std::process::id(),
        "husk serving on http://{address} (the dashboard: http://{address}/ui)"
    );
    let unreachable: Vec<&str> =
        config.topics.iter().filter(|(_, topic)| topic.tenant.is_none()).map(|(name, _)| name.as_str()).collect();
    if !unreachable.is_empty() {
        tracing::warn!(
            topics = ?unreachable,
            "topics without a tenant run, but no API token reaches them: give each `tenant = \"NAME\"` \
             and add `[tenants.NAME]` with `tokens`"
        );
    }
    ready(address);
    let signal = runtime.block_on(async {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let shutdown = {
            let feed = feed.clone();
            async move {
                let signal = stop.next().await;
                // Long-polls and event streams end now; the rest of the
                // open requests get `CONNECTIONS_DRAIN`.
                feed.close();
                let _ = tx.send(signal);
            }
        };
        let server = axum::serve(listener, crate::router(api)).with_graceful_shutdown(shutdown);
        tokio::select! {
            served = server.into_future() => served.context("serving the API")?,
            () = async {
                feed.closed().await;
                tokio::time::sleep(CONNECTIONS_DRAIN).await;
            } => tracing::warn!(drain = ?CONNECTIONS_DRAIN, "requests still open after the signal are cut off"),
        }
        rx.await.context("the API stopped without a signal")?
    })?;
    stop_watch.store(true, Ordering::Release);
    if let Some(watcher) = watcher {
        let _ = watcher.join();
    }
    let grace = config.shutdown_grace();
    tracing::info!(signal, ?grace, "shutting down: no new fetches; running jobs get the grace period");
    let in_time = host.shutdown_within(Some(grace));
    let totals = host.totals();
    tracing::info!(
        in_time,
        uptime = ?started.elapsed(),
        completed = totals.completed,
        failed = totals.failed,
        retries = totals.retries,
        "husk stopped"
    );
    Ok(())
}

/// Where the stop comes from.
enum StopSource {
    Signals(Signals),
    Channel(tokio::sync::oneshot::Receiver<()>),
}

impl StopSource {
    /// Waits for the stop; returns what it was.
    async fn next(self) -> anyhow::Result<&'static str> {
        match self {
            Self::Signals(signals) => signals.next().await,
            Self::Channel(receiver) => {
                let _ = receiver.await;
                Ok("stop")
            }
        }
    }
}

/// The handlers of SIGINT (Ctrl-C) and SIGTERM, installed when made (not
/// when first awaited).
struct Signals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    /// Installs both handlers; must run inside the runtime.
    fn install() -> anyhow::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            interrupt: signal(SignalKind::interrupt()).context("installing the SIGINT handler")?,
            terminate: signal(SignalKind::terminate()).context("installing the SIGTERM handler")?,
        })
    }

    /// Waits for either signal; returns its name.
    async fn next(mut self) -> anyhow::Result<&'static str> {
        tokio::select! {
            _ = self.interrupt.recv() => Ok("SIGINT"),
            _ = self.terminate.recv() => Ok("SIGTERM"),
        }
    }
}

/// `--watch`: deploys a topic's plugin file again whenever its modification
/// time or size changes. A version that fails validation is logged and the
/// current one stays. Like a deploy through the API, it takes components
/// only, even with `allow_precompiled`: a watched file is one a plugin's
/// developer rewrites, not the operator's fixed artifact.
fn watch(host: Arc<Host>, config: &Config, base: &Path, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    let files: Vec<(String, PathBuf)> =
        config.topics.iter().map(|(name, topic)| (name.clone(), base.join(&topic.plugin))).collect();
    let stamp = |path: &Path| std::fs::metadata(path).ok().map(|m| (m.modified().ok(), m.len()));
    let mut seen: Vec<Option<(Option<SystemTime>, u64)>> = files.iter().map(|(_, path)| stamp(path)).collect();
    std::thread::Builder::new()
        .name("husk-watch".into())
        .spawn(move || {
            while !stop.load(Ordering::Acquire) {
                // Real time on purpose: it watches files on disk.
                std::thread::sleep(WATCH_EVERY);
                for ((topic, path), seen) in files.iter().zip(seen.iter_mut()) {
                    let now = stamp(path);
                    if now.is_none() || now == *seen {
                        continue;
                    }
                    *seen = now;
                    match host.deploy(topic, &PluginSource::Path(path.clone()), Origin::Watch) {
                        Ok(info) => tracing::info!(topic, version = %info.version, "--watch: deployed the changed plugin"),
                        Err(error) => tracing::warn!(topic, %error, "--watch: the changed plugin was refused; the current version stays"),
                    }
                }
            }
        })
        .expect("spawning the watch thread")
}
