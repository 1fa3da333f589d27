//! Guest logs: the `log` import and the guest's stdout/stderr, written to
//! `tracing` under the target `husk::guest`, with a per-job byte cap.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use serde::Serialize;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

use crate::bindings::LogLevel;

/// The `tracing` target of everything a guest logs.
pub const GUEST_TARGET: &str = "husk::guest";

/// How many bytes of stderr are kept as the guest's last words, for the body
/// of a `husk.trap` fault (a Rust panic message goes there).
const STDERR_TAIL: usize = 2048;

/// What one job logged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LogStats {
    /// Bytes of messages written to the log.
    pub bytes_written: u64,
    /// Bytes of messages dropped because the job reached its cap.
    pub bytes_dropped: u64,
}

/// The log of one job, shared by the `log` import and the stdio streams.
#[derive(Clone)]
pub(crate) struct JobLog {
    inner: Arc<Mutex<Inner>>,
}

struct Inner {
    job_id: String,
    topic: String,
    cap: u64,
    stats: LogStats,
    stderr_tail: VecDeque<u8>,
}

#[derive(Clone, Copy)]
enum Source {
    Log(LogLevel),
    Stdout,
    Stderr,
}

impl JobLog {
    pub(crate) fn new(job_id: &str, topic: &str, cap: u64) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Inner {
                job_id: job_id.to_owned(),
                topic: topic.to_owned(),
                cap,
                stats: LogStats::default(),
                stderr_tail: VecDeque::new(),
            })),
        }
    }

    /// A message from the `log` import.
    pub(crate) fn log(&self, level: LogLevel, message: &str) {
        self.write(Source::Log(level), message.as_bytes());
    }

    pub(crate) fn stats(&self) -> LogStats {
        self.lock().stats
    }

    /// The last bytes the guest wrote to stderr, trimmed; `None` if nothing.
    pub(crate) fn stderr_tail(&self) -> Option<String> {
        let inner = self.lock();
        let (a, b) = inner.stderr_tail.as_slices();
        let text = String::from_utf8_lossy(&[a, b].concat()).trim().to_owned();
        (!text.is_empty()).then_some(text)
    }

    /// A stdout or stderr stream for the guest's WASI context.
    pub(crate) fn stdout(&self) -> GuestOutput {
        GuestOutput { log: self.clone(), source_stderr: false }
    }

    pub(crate) fn stderr(&self) -> GuestOutput {
        GuestOutput { log: self.clone(), source_stderr: true }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write(&self, source: Source, bytes: &[u8]) {
        let mut inner = self.lock();
        if let Source::Stderr = source {
            inner.stderr_tail.extend(bytes);
            let excess = inner.stderr_tail.len().saturating_sub(STDERR_TAIL);
            inner.stderr_tail.drain(..excess);
        }
        let len = bytes.len() as u64;
        if inner.stats.bytes_written + len > inner.cap {
            if inner.stats.bytes_dropped == 0 {
                tracing::warn!(
                    target: GUEST_TARGET,
                    job_id = %inner.job_id,
                    topic = %inner.topic,
                    cap = inner.cap,
                    "guest log cap reached; dropping further guest log output"
                );
            }
            inner.stats.bytes_dropped += len;
            return;
        }
        inner.stats.bytes_written += len;
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim();
        let (job_id, topic) = (&inner.job_id, &inner.topic);
        match source {
            Source::Log(LogLevel::Trace) => tracing::trace!(target: GUEST_TARGET, job_id = %job_id, %topic, "{text}"),
            Source::Log(LogLevel::Debug) => tracing::debug!(target: GUEST_TARGET, job_id = %job_id, %topic, "{text}"),
            Source::Log(LogLevel::Info) => tracing::info!(target: GUEST_TARGET, job_id = %job_id, %topic, "{text}"),
            Source::Log(LogLevel::Warn) => tracing::warn!(target: GUEST_TARGET, job_id = %job_id, %topic, "{text}"),
            Source::Log(LogLevel::Error) => tracing::error!(target: GUEST_TARGET, job_id = %job_id, %topic, "{text}"),
            Source::Stdout => {
                tracing::info!(target: GUEST_TARGET, job_id = %job_id, %topic, stream = "stdout", "{text}")
            }
            Source::Stderr => {
                tracing::warn!(target: GUEST_TARGET, job_id = %job_id, %topic, stream = "stderr", "{text}")
            }
        }
    }
}

/// The guest's stdout or stderr: every write goes to the job's log. Writes
/// never fail and never block; past the cap they are counted and dropped.
pub(crate) struct GuestOutput {
    log: JobLog,
    source_stderr: bool,
}

impl GuestOutput {
    fn source(&self) -> Source {
        if self.source_stderr { Source::Stderr } else { Source::Stdout }
    }
}

impl IsTerminal for GuestOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for GuestOutput {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(GuestOutput { log: self.log.clone(), source_stderr: self.source_stderr })
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(GuestOutput { log: self.log.clone(), source_stderr: self.source_stderr })
    }
}

#[async_trait::async_trait]
impl Pollable for GuestOutput {
    async fn ready(&mut self) {}
}

impl OutputStream for GuestOutput {
    fn write(&mut self, bytes: bytes::Bytes) -> StreamResult<()> {
        self.log.write(self.source(), &bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(64 << 10)
    }
}

impl tokio::io::AsyncWrite for GuestOutput {
    fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.log.write(self.source(), buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
