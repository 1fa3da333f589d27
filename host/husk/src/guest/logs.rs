//! Guest logs: the `log` import and the guest's stdout/stderr, written to
//! `tracing` under the target `husk::guest`, with a per-job byte cap.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use parking_lot::Mutex;

use serde::Serialize;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

use crate::bindings::LogLevel;
use crate::capability::{RedactingStream, Redactor};

/// The `tracing` target of everything a guest logs.
pub const GUEST_TARGET: &str = "husk::guest";

/// How many bytes of stderr are kept as the guest's last words, for the body
/// of a `husk.trap` fault (a Rust panic message goes there).
const STDERR_TAIL: usize = 2048;

/// Longest stdout/stderr line held back waiting for its newline.
const MAX_LINE: usize = 4096;

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
    /// The topic's secrets, replaced by `***` in everything logged.
    redactor: Redactor,
    stats: LogStats,
    /// The last bytes of stderr, secrets replaced.
    stderr_tail: VecDeque<u8>,
    stdout: Stream,
    stderr: Stream,
}

/// Stdout or stderr on its way to the log: redacted as a stream first (a
/// secret may span writes and lines), then cut into lines.
struct Stream {
    redacting: RedactingStream,
    /// The partial line, written out at its newline.
    line: Vec<u8>,
}

#[derive(Clone, Copy)]
enum Source {
    Log(LogLevel),
    Stdout,
    Stderr,
}

impl JobLog {
    pub(crate) fn new(job_id: &str, topic: &str, cap: u64, redactor: Redactor) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Inner {
                job_id: job_id.to_owned(),
                topic: topic.to_owned(),
                cap,
                redactor: redactor.clone(),
                stats: LogStats::default(),
                stderr_tail: VecDeque::new(),
                stdout: Stream { redacting: redactor.stream(), line: Vec::new() },
                stderr: Stream { redacting: redactor.stream(), line: Vec::new() },
            })),
        }
    }

    /// A message from the `log` import.
    pub(crate) fn log(&self, level: LogLevel, message: &str) {
        self.lock().emit(Source::Log(level), message.as_bytes());
    }

    /// Writes out what is left of unfinished stdout and stderr lines; called
    /// when the job ends.
    pub(crate) fn finish(&self) {
        let mut inner = self.lock();
        for source in [Source::Stdout, Source::Stderr] {
            let mut redacted = Vec::new();
            inner.stream(source).redacting.finish(&mut redacted);
            inner.take_lines(source, &redacted);
            let rest = std::mem::take(&mut inner.stream(source).line);
            if !rest.is_empty() {
                inner.emit(source, &rest);
            }
        }
    }

    pub(crate) fn stats(&self) -> LogStats {
        self.lock().stats
    }

    /// The last bytes the guest wrote to stderr, trimmed; `None` if nothing.
    pub(crate) fn stderr_tail(&self) -> Option<String> {
        let inner = self.lock();
        let (a, b) = inner.stderr_tail.as_slices();
        let text = String::from_utf8_lossy(&[a, b].concat()).trim().to_owned();
        (!text.is_empty()).then(|| inner.redactor.redact(&text).into_owned())
    }

    /// A stdout or stderr stream for the guest's WASI context.
    pub(crate) fn stdout(&self) -> GuestOutput {
        GuestOutput { log: self.clone(), source_stderr: false }
    }

    pub(crate) fn stderr(&self) -> GuestOutput {
        GuestOutput { log: self.clone(), source_stderr: true }
    }

    fn lock(&self) -> parking_lot::MutexGuard<'_, Inner> {
        self.inner.lock()
    }
}

impl Inner {
    fn stream(&mut self, source: Source) -> &mut Stream {
        match source {
            Source::Stderr => &mut self.stderr,
            _ => &mut self.stdout,
        }
    }

    /// Bytes written to stdout or stderr: redacted, then whole lines to the
    /// log.
    fn write_stream(&mut self, source: Source, bytes: &[u8]) {
        let mut redacted = Vec::new();
        self.stream(source).redacting.write(bytes, &mut redacted);
        self.take_lines(source, &redacted);
    }

    /// Redacted bytes of stdout or stderr: whole lines (or cuts of
    /// [`MAX_LINE`] bytes) go to the log, stderr's last bytes to its tail.
    fn take_lines(&mut self, source: Source, bytes: &[u8]) {
        if let Source::Stderr = source {
            self.stderr_tail.extend(bytes);
            let excess = self.stderr_tail.len().saturating_sub(STDERR_TAIL);
            self.stderr_tail.drain(..excess);
        }
        let mut buffer = std::mem::take(&mut self.stream(source).line);
        buffer.extend_from_slice(bytes);
        let mut start = 0;
        while let Some(newline) = buffer[start..].iter().position(|&b| b == b'\n') {
            self.emit(source, &buffer[start..start + newline]);
            start += newline + 1;
        }
        while buffer.len() - start >= MAX_LINE {
            self.emit(source, &buffer[start..start + MAX_LINE]);
            start += MAX_LINE;
        }
        buffer.drain(..start);
        self.stream(source).line = buffer;
    }

    /// Writes one message to `tracing`, within the job's cap.
    fn emit(&mut self, source: Source, bytes: &[u8]) {
        let len = bytes.len() as u64;
        if self.stats.bytes_written + len > self.cap {
            if self.stats.bytes_dropped == 0 {
                tracing::warn!(
                    target: GUEST_TARGET,
                    job_id = %self.job_id,
                    topic = %self.topic,
                    cap = self.cap,
                    "guest log cap reached; dropping further guest log output"
                );
            }
            self.stats.bytes_dropped += len;
            return;
        }
        self.stats.bytes_written += len;
        let text = String::from_utf8_lossy(bytes);
        let text = self.redactor.redact(text.trim_end());
        let text = escape_controls(&text);
        let (job_id, topic) = (&self.job_id, &self.topic);
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

/// Guest text as one log field: control characters (newline, carriage
/// return, NUL, escape sequences...) and Unicode line separators are written
/// as escapes (`\n`, `\r`, `\u{1b}`), so a guest cannot end its line in
/// husk's log and forge one of husk's own, or drive the operator's terminal.
fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    let escaped = |c: char| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}');
    if !text.chars().any(escaped) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if escaped(c) => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
    out.into()
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
        self.log.lock().write_stream(self.source(), &bytes);
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
        self.log.lock().write_stream(self.source(), buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::escape_controls;

    #[test]
    fn control_characters_are_escaped_and_plain_text_is_not_copied() {
        assert!(matches!(escape_controls("plain text, ünïcode"), std::borrow::Cow::Borrowed(_)));
        assert_eq!(
            escape_controls("a\nb\rc\td\0e\u{1b}[31mf\u{2028}g\u{7f}"),
            "a\\nb\\rc\\td\\u{0}e\\u{1b}[31mf\\u{2028}g\\u{7f}"
        );
    }
}
