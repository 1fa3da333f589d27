//! Limit kills and traps: the endings a guest did not choose, decided by
//! downcasting the error wasmtime returns, and turned into reserved faults.

use std::time::Duration;

use serde_json::json;
use wasmtime::Trap;

use crate::fault::{Fault, codes};
use crate::guest::{CancelRequested, DeadlinePassed, MemoryLimitExceeded};

/// A job killed by the host or ended by a trap. Each has a reserved fault
/// code ([`Kill::code`]) and becomes a fault whose body says what happened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Kill {
    /// The job ran past its deadline.
    #[error("killed at its deadline of {deadline:?} after {elapsed:?}")]
    Timeout {
        /// The job's deadline.
        deadline: Duration,
        /// Wall time the job ran.
        elapsed: Duration,
    },
    /// The job consumed its whole fuel budget.
    #[error("killed after consuming its fuel budget of {fuel}")]
    OutOfFuel {
        /// The budget.
        fuel: u64,
    },
    /// The job tried to grow its memory past its cap.
    #[error("killed asking for {requested} bytes of memory over its cap of {limit}")]
    MemoryLimit {
        /// The cap, in bytes.
        limit: u64,
        /// What the guest asked for, in bytes.
        requested: u64,
    },
    /// The job exhausted the WebAssembly call stack.
    #[error("exhausted its call stack of {max_wasm_stack} bytes")]
    StackOverflow {
        /// The engine's WebAssembly stack size, in bytes.
        max_wasm_stack: usize,
    },
    /// The job trapped (a panic, `unreachable`, a bad memory access...).
    #[error("trapped: {reason}")]
    Trap {
        /// What trapped, as wasmtime reports it.
        reason: String,
        /// What the guest last wrote to stderr (a Rust panic message lands
        /// there), if anything.
        guest_message: Option<String>,
    },
    /// The job's output (or fault body) was larger than the host accepts.
    #[error("returned {size} bytes, over the cap of {limit}")]
    OutputTooLarge {
        /// The cap, in bytes.
        limit: u64,
        /// What the guest returned, in bytes.
        size: u64,
    },
    /// The host failed to run the job (it could not start a sandbox, or
    /// husk's own code panicked): not the guest's doing.
    #[error("the host failed to run the job: {reason}")]
    HostError {
        /// What failed.
        reason: String,
    },
}

impl Kill {
    /// The reserved fault code of this ending.
    pub fn code(&self) -> &'static str {
        match self {
            Kill::Timeout { .. } => codes::TIMEOUT,
            Kill::OutOfFuel { .. } => codes::OUT_OF_FUEL,
            Kill::MemoryLimit { .. } => codes::MEMORY_LIMIT,
            Kill::StackOverflow { .. } => codes::STACK_OVERFLOW,
            Kill::Trap { .. } => codes::TRAP,
            Kill::OutputTooLarge { .. } => codes::OUTPUT_TOO_LARGE,
            Kill::HostError { .. } => codes::HOST_ERROR,
        }
    }

    /// Whether the host killed the job for passing a limit (as opposed to
    /// the guest trapping on its own, or the host failing).
    pub fn is_limit(&self) -> bool {
        !matches!(self, Kill::Trap { .. } | Kill::HostError { .. })
    }

    /// The raw fault for this ending: the reserved code, and a JSON body
    /// with the limit and what the job did. `elapsed` is the job's wall time.
    pub fn to_fault(&self, elapsed: Duration) -> Fault {
        let elapsed_ms = millis(elapsed);
        let body = match self {
            Kill::Timeout { deadline, .. } => {
                json!({ "message": self.to_string(), "deadline_ms": millis(*deadline), "elapsed_ms": elapsed_ms })
            }
            Kill::OutOfFuel { fuel } => json!({ "message": self.to_string(), "fuel": fuel, "elapsed_ms": elapsed_ms }),
            Kill::MemoryLimit { limit, requested } => json!({
                "message": self.to_string(),
                "limit_bytes": limit,
                "requested_bytes": requested,
                "elapsed_ms": elapsed_ms,
            }),
            Kill::StackOverflow { max_wasm_stack } => json!({
                "message": self.to_string(),
                "max_wasm_stack_bytes": max_wasm_stack,
                "elapsed_ms": elapsed_ms,
            }),
            Kill::Trap { reason, guest_message } => json!({
                "message": self.to_string(),
                "trap": reason,
                "guest_message": guest_message,
                "elapsed_ms": elapsed_ms,
            }),
            Kill::OutputTooLarge { limit, size } => json!({
                "message": self.to_string(),
                "limit_bytes": limit,
                "size_bytes": size,
                "elapsed_ms": elapsed_ms,
            }),
            Kill::HostError { reason } => {
                json!({ "message": self.to_string(), "reason": reason, "elapsed_ms": elapsed_ms })
            }
        };
        Fault::json(self.code(), &body)
    }
}

fn millis(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

/// What a failed call means, decided by downcasting the error.
pub(crate) enum Failure {
    Cancelled,
    Killed(Kill),
}

/// Everything a failed instantiation or call needs to be classified.
pub(crate) struct FailureContext {
    pub(crate) deadline: Duration,
    pub(crate) elapsed: Duration,
    pub(crate) fuel: Option<u64>,
    pub(crate) max_wasm_stack: usize,
    pub(crate) guest_message: Option<String>,
}

/// Classifies an error from instantiating or calling a guest.
pub(crate) fn classify_error(error: &wasmtime::Error, cx: FailureContext) -> Failure {
    if error.downcast_ref::<CancelRequested>().is_some() {
        return Failure::Cancelled;
    }
    if error.downcast_ref::<DeadlinePassed>().is_some() {
        return Failure::Killed(Kill::Timeout { deadline: cx.deadline, elapsed: cx.elapsed });
    }
    if let Some(exceeded) = error.downcast_ref::<MemoryLimitExceeded>() {
        return Failure::Killed(Kill::MemoryLimit { limit: exceeded.limit, requested: exceeded.requested });
    }
    let kill = match error.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => Kill::Timeout { deadline: cx.deadline, elapsed: cx.elapsed },
        Some(Trap::OutOfFuel) => Kill::OutOfFuel { fuel: cx.fuel.unwrap_or(0) },
        Some(Trap::StackOverflow) => Kill::StackOverflow { max_wasm_stack: cx.max_wasm_stack },
        Some(trap) => Kill::Trap { reason: trap.to_string(), guest_message: cx.guest_message },
        None => Kill::Trap { reason: format!("{error:#}"), guest_message: cx.guest_message },
    };
    Failure::Killed(kill)
}
