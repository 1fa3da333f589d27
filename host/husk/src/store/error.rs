//! Why a store call failed.

use std::sync::Arc;

/// The error underneath a store's failure, as the database driver gave it
/// (shared: one failed commit fails every call in it). The failure's
/// message already names it; this keeps it typed (see
/// [`StoreError::cause`]).
pub type Cause = Arc<dyn std::error::Error + Send + Sync>;

/// Why a store call failed, on one line naming the store (a file, or a
/// URL with its password hidden) — and of a kind a caller can act on:
/// [`StoreError::is_retryable`] tells a failure worth trying again (the
/// store is unreachable or busy, or a write met a concurrent one) from one
/// that will not pass by itself.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum StoreError {
    /// The store cannot be reached or used now: a connection refused or
    /// lost, an I/O error, a lock or pool timeout. Retryable.
    Unavailable {
        /// The store, e.g. `SQLite store husk-data/husk.db`.
        store: String,
        /// What failed, and why.
        message: String,
        /// The failure underneath (the database driver's), when there is one.
        cause: Option<Cause>,
    },
    /// A write conflicted with a concurrent one (a serialization failure,
    /// a deadlock, a unique key). Retryable.
    Conflict {
        /// The store.
        store: String,
        /// What failed, and why.
        message: String,
        /// The failure underneath (the database driver's), when there is one.
        cause: Option<Cause>,
    },
    /// A stored value cannot be read: a corrupt row or file, a value that
    /// does not decode.
    Corrupt {
        /// The store.
        store: String,
        /// What failed, and why.
        message: String,
        /// The failure underneath (the database driver's), when there is one.
        cause: Option<Cause>,
    },
    /// The store was written by a newer husk, whose schema this one does
    /// not know: upgrade this husk (nothing was changed).
    NewerSchema {
        /// The store.
        store: String,
        /// The store's schema version.
        version: i64,
        /// The newest this husk knows.
        known: i64,
    },
    /// The store refused what it was asked (a bad URL or schema name, a
    /// statement it rejects): not retryable as it is.
    Failed {
        /// The store.
        store: String,
        /// What failed, and why.
        message: String,
        /// The failure underneath (the database driver's), when there is one.
        cause: Option<Cause>,
    },
    /// The store does not support what was asked (see
    /// [`JobStore::supports`](super::JobStore::supports)): not retryable.
    Unsupported {
        /// The capability, as [`Supports`](super::Supports) names it.
        capability: &'static str,
    },
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Unavailable { store, message, .. }
            | StoreError::Conflict { store, message, .. }
            | StoreError::Corrupt { store, message, .. }
            | StoreError::Failed { store, message, .. } => write!(f, "{store}: {message}"),
            StoreError::NewerSchema { store, version, known } => {
                write!(f, "{store}: written by a newer husk (schema {version}; this husk knows up to {known})")
            }
            StoreError::Unsupported { capability } => write!(f, "this store does not support {capability}"),
        }
    }
}

/// No `source()`: the message already names the cause on its one line,
/// and the CLI prints an error's chain (`{:#}`), which would say it twice.
/// The driver's error itself is [`StoreError::cause`].
impl std::error::Error for StoreError {}

impl StoreError {
    /// The driver's error underneath, typed (downcast it to, say,
    /// `rusqlite::Error` or `postgres::Error`); `None` where there is none.
    pub fn cause(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        match self {
            StoreError::Unavailable { cause, .. }
            | StoreError::Conflict { cause, .. }
            | StoreError::Corrupt { cause, .. }
            | StoreError::Failed { cause, .. } => cause.as_deref(),
            StoreError::NewerSchema { .. } | StoreError::Unsupported { .. } => None,
        }
    }

    /// Whether trying the same call again later may succeed
    /// ([`StoreError::Unavailable`], [`StoreError::Conflict`]).
    pub fn is_retryable(&self) -> bool {
        matches!(self, StoreError::Unavailable { .. } | StoreError::Conflict { .. })
    }
}
