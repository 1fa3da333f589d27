//! Why a store call failed.

/// Why a store call failed, on one line naming the store (a file, or a
/// URL with its password hidden) — and of a kind a caller can act on:
/// [`StoreError::is_retryable`] tells a failure worth trying again (the
/// store is unreachable or busy, or a write met a concurrent one) from one
/// that will not pass by itself.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The store cannot be reached or used now: a connection refused or
    /// lost, an I/O error, a lock or pool timeout. Retryable.
    #[error("{store}: {message}")]
    Unavailable {
        /// The store, e.g. `SQLite store husk-data/husk.db`.
        store: String,
        /// What failed, and why.
        message: String,
    },
    /// A write conflicted with a concurrent one (a serialization failure,
    /// a deadlock, a unique key). Retryable.
    #[error("{store}: {message}")]
    Conflict {
        /// The store.
        store: String,
        /// What failed, and why.
        message: String,
    },
    /// A stored value cannot be read: a corrupt row or file, a value that
    /// does not decode.
    #[error("{store}: {message}")]
    Corrupt {
        /// The store.
        store: String,
        /// What failed, and why.
        message: String,
    },
    /// The store was written by a newer husk, whose schema this one does
    /// not know: upgrade this husk (nothing was changed).
    #[error("{store}: written by a newer husk (schema {version}; this husk knows up to {known})")]
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
    #[error("{store}: {message}")]
    Failed {
        /// The store.
        store: String,
        /// What failed, and why.
        message: String,
    },
    /// The store does not support what was asked (see
    /// [`JobStore::supports`](super::JobStore::supports)): not retryable.
    #[error("this store does not support {capability}")]
    Unsupported {
        /// The capability, as [`Supports`](super::Supports) names it.
        capability: &'static str,
    },
}

impl StoreError {
    /// Whether trying the same call again later may succeed
    /// ([`StoreError::Unavailable`], [`StoreError::Conflict`]).
    pub fn is_retryable(&self) -> bool {
        matches!(self, StoreError::Unavailable { .. } | StoreError::Conflict { .. })
    }
}
