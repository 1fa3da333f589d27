//! Tenants: who may call the API (tokens, kept only as SHA-256 hashes) and
//! the quotas that bound what a tenant's topics may take from the host.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Limits one tenant's topics share. `None` is unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Quota {
    /// Most jobs of the tenant running at once, across its topics.
    pub max_concurrent: Option<usize>,
    /// Most live (queued, gated or running) jobs across its topics.
    pub max_queued: Option<u64>,
}

/// Counts a tenant's running jobs against its `max_concurrent`: a worker
/// takes a permit per job it claims and gives it back when the job's report
/// is in. Permits are taken only together with claimed jobs, so an idle
/// worker never holds one another topic of the tenant could use.
#[derive(Debug)]
pub struct ConcurrencyGate {
    limit: usize,
    used: AtomicUsize,
}

impl ConcurrencyGate {
    /// A gate letting `limit` jobs run at once.
    pub fn new(limit: usize) -> Self {
        Self { limit: limit.max(1), used: AtomicUsize::new(0) }
    }

    /// The limit.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Permits in use.
    pub fn in_use(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    /// Takes up to `want` permits without waiting; returns how many it took
    /// (0 when the tenant is at its limit).
    pub fn try_take(&self, want: usize) -> usize {
        let mut used = self.used.load(Ordering::Acquire);
        loop {
            let take = want.min(self.limit.saturating_sub(used));
            if take == 0 {
                return 0;
            }
            match self.used.compare_exchange_weak(used, used + take, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return take,
                Err(now) => used = now,
            }
        }
    }

    /// Gives back `n` permits.
    pub fn give(&self, n: usize) {
        if n > 0 {
            let before = self.used.fetch_sub(n, Ordering::AcqRel);
            debug_assert!(before >= n, "gave back more permits than taken");
        }
    }
}

/// The API's view of the tenants: which token hash belongs to whom.
#[derive(Debug, Clone, Default)]
pub struct Tenants {
    by_hash: HashMap<String, String>,
}

impl Tenants {
    /// Tenants from `(token hash, tenant)` pairs.
    pub fn new(hashes: impl IntoIterator<Item = (String, String)>) -> Self {
        Self { by_hash: hashes.into_iter().collect() }
    }

    /// The tenant whose token this is. The token is hashed first, so the
    /// lookup compares digests, never the secret itself.
    pub fn authenticate(&self, token: &str) -> Option<&str> {
        self.by_hash.get(&crate::config::token_hash(token)).map(String::as_str)
    }

    /// Whether no token is configured (every API call is then refused).
    pub fn is_empty(&self) -> bool {
        self.by_hash.is_empty()
    }
}
