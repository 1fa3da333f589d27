//! Why a run must stop, raised by the job's store (its epoch callback, its
//! waits, its resource limiter) and told apart by the sandbox by
//! downcasting.

/// The job tried to grow its memory past its cap (raised by the job's
/// resource limiter, so it can be told apart from any other trap).
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("memory cap of {limit} bytes exceeded: {current} bytes in use, {requested} requested")]
pub struct MemoryLimitExceeded {
    /// The cap, in bytes.
    pub limit: u64,
    /// The memory's size before the failed growth.
    pub current: u64,
    /// The size the guest asked for.
    pub requested: u64,
}

/// The job's epoch deadline passed (raised by the epoch callback).
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("deadline of {ticks} epoch ticks passed")]
pub(crate) struct DeadlinePassed {
    pub(crate) ticks: u64,
}

/// The job was cancelled while running (raised by the epoch callback).
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("job cancelled")]
pub(crate) struct CancelRequested;
