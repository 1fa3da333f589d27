//! `husk serve`: the dispatcher and the worker pools of every topic in a
//! config file, until SIGINT or SIGTERM; then a graceful shutdown.

use std::path::Path;
use std::time::Instant;

use anyhow::Context;

use crate::config::Config;
use crate::host::Host;
use crate::outcome::{OutcomeSink, TerminalOutcome};

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

/// Runs husk as configured by `config_path` until SIGINT or SIGTERM.
///
/// # Errors
///
/// A one-line error for a bad config file, store or plugin (nothing is
/// started then), or when the signal handlers cannot be installed.
pub fn run(config_path: &Path, default_cache: Option<std::path::PathBuf>) -> anyhow::Result<()> {
    let config = Config::load(config_path)?;
    let base = config_path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let store = config.open_store(base)?;
    let mut builder =
        Host::builder().store(store).engine(config.engine(base, default_cache)).sink(std::sync::Arc::new(LogSink));
    if let Some(retry) = config.retry {
        builder = builder.default_retry(retry);
    }
    for topic in config.topics(base) {
        builder = builder.topic(topic);
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().context("starting the runtime")?;
    let started = Instant::now();
    let host = builder.build()?;
    tracing::info!(
        config = %config_path.display(),
        store = config.store.as_deref().unwrap_or(crate::config::DEFAULT_STORE),
        topics = config.topics.len(),
        pid = std::process::id(),
        "husk serving"
    );
    let signal = runtime.block_on(shutdown_signal())?;
    let grace = config.shutdown_grace();
    tracing::info!(signal, ?grace, "shutting down: no new fetches; running jobs get the grace period");
    let in_time = host.shutdown_within(Some(grace));
    let totals = host.dispatcher().totals();
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

/// Waits for SIGINT (Ctrl-C) or SIGTERM; returns its name.
async fn shutdown_signal() -> anyhow::Result<&'static str> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing the SIGTERM handler")?;
    tokio::select! {
        result = tokio::signal::ctrl_c() => {
            result.context("installing the SIGINT handler")?;
            Ok("SIGINT")
        }
        _ = term.recv() => Ok("SIGTERM"),
    }
}
