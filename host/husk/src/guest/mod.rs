//! What a guest's instance holds and sees while it runs: its store's data
//! ([`JobState`]: its WASI context, deny-by-default, its log, its resource
//! limiter), and the bound on every wait it can make in a host call
//! ([`Bound`]), with the errors that stop a run.

mod logs;
mod runtime;
mod state;
mod stops;
mod waits;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub(crate) use logs::JobLog;
pub use logs::{GUEST_TARGET, LogStats};
pub(crate) use state::{JobLimiter, JobNames, JobState};
pub use stops::MemoryLimitExceeded;
pub(crate) use stops::{CancelRequested, DeadlinePassed};
pub(crate) use waits::{Bound, BoundedIo};

/// A flag that cancels a job: a running job is interrupted at the next
/// epoch tick (in WebAssembly or in a wait) and ends cancelled. Cheap to
/// clone.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    /// A token that has not been cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels the job.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Whether the job was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}
