//! Logging to the host.
//!
//! Messages go to the host's `log` import, which writes them to the host's
//! structured log tagged with the job and topic. The host caps the bytes one
//! job may log; past the cap, messages are dropped.

pub use crate::__bindings::operation::husk::worker::log::Level;

/// Writes `message` to the host's log at `level`.
pub fn log(level: Level, message: &str) {
    crate::__bindings::operation::husk::worker::log::log(level, message);
}

/// Logs a `format!`-style message at level `trace` (very fine-grained tracing).
#[macro_export]
macro_rules! trace {
    ($($arg:tt)*) => {
        $crate::log::log($crate::log::Level::Trace, &::std::format!($($arg)*))
    };
}

/// Logs a `format!`-style message at level `debug` (debugging detail).
#[macro_export]
macro_rules! debug {
    ($($arg:tt)*) => {
        $crate::log::log($crate::log::Level::Debug, &::std::format!($($arg)*))
    };
}

/// Logs a `format!`-style message at level `info` (normal operational messages).
#[macro_export]
macro_rules! info {
    ($($arg:tt)*) => {
        $crate::log::log($crate::log::Level::Info, &::std::format!($($arg)*))
    };
}

/// Logs a `format!`-style message at level `warn` (something unexpected that did not stop the job).
#[macro_export]
macro_rules! warn {
    ($($arg:tt)*) => {
        $crate::log::log($crate::log::Level::Warn, &::std::format!($($arg)*))
    };
}

/// Logs a `format!`-style message at level `error` (something that failed).
#[macro_export]
macro_rules! error {
    ($($arg:tt)*) => {
        $crate::log::log($crate::log::Level::Error, &::std::format!($($arg)*))
    };
}
