//! What a topic grants of outbound HTTP (`wasi:http`): the allowlist,
//! the timeout and the caps of one job (see `outbound` for how each request
//! is held to them).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::allowed::AllowedHost;

/// What a topic grants of outbound HTTP. `HttpGrant::default()` allows no
/// host, a 30 s timeout, 16 MiB of response bodies and 64 requests per job.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpGrant {
    /// The destinations allowed; empty: none.
    pub allowed: Vec<AllowedHost>,
    /// The longest connect, first-byte or between-bytes wait.
    pub timeout: Duration,
    /// The most bytes of response bodies one job may read.
    pub max_response: u64,
    /// The most requests one job may make (those denied by the allowlist
    /// count too).
    pub max_requests: u32,
    /// How host names are resolved: the system's resolver unless set.
    pub resolver: Option<Resolver>,
}

/// Resolves a host name and port to addresses, in place of the system's
/// resolver (an embedder's own name service; tests pointing a name at an
/// address). Its answers are checked like the system's.
#[derive(Clone)]
pub struct Resolver(pub Arc<ResolveFn>);

/// What a [`Resolver`] calls: the host name and port, to addresses.
pub type ResolveFn = dyn Fn(&str, u16) -> Vec<SocketAddr> + Send + Sync;

impl std::fmt::Debug for Resolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Resolver(..)")
    }
}

impl Default for HttpGrant {
    fn default() -> Self {
        Self {
            allowed: Vec::new(),
            timeout: Duration::from_secs(30),
            max_response: 16 << 20,
            max_requests: 64,
            resolver: None,
        }
    }
}

impl HttpGrant {
    /// Allows `allowed`.
    #[must_use]
    pub fn with_allowed(mut self, allowed: Vec<AllowedHost>) -> Self {
        self.allowed = allowed;
        self
    }

    /// Sets the timeout.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the cap on response bytes per job.
    #[must_use]
    pub fn with_max_response(mut self, max_response: u64) -> Self {
        self.max_response = max_response;
        self
    }

    /// Resolves host names with `resolver`.
    #[must_use]
    pub fn with_resolver(mut self, resolver: Resolver) -> Self {
        self.resolver = Some(resolver);
        self
    }

    /// Sets the cap on requests per job.
    #[must_use]
    pub fn with_max_requests(mut self, max_requests: u32) -> Self {
        self.max_requests = max_requests;
        self
    }
}
