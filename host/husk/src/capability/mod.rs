//! Capabilities a topic grants its jobs, each denied until granted:
//! outbound HTTP to the hosts of an allowlist ([`HttpGrant`]), and config
//! values and secrets through `wasi:config/store` ([`ConfigGrant`]). A
//! component importing `wasi:http` or `wasi:config` is refused at load by a
//! topic that does not grant it. Outbound HTTP needs the crate's `http`
//! feature (on by default; it brings wasmtime-wasi-http, hyper's client and
//! rustls): without it, `wasi:http` is refused everywhere.

mod allowed;
mod config;
mod http;
#[cfg(feature = "http")]
mod outbound;
mod redact;

use std::sync::Arc;

pub use allowed::{AllowedHost, AllowedHostError, is_not_global, is_prohibited};
pub use config::{ConfigGrant, Secret, SecretError};
pub use http::{HttpGrant, ResolveFn, Resolver};
#[cfg(feature = "http")]
pub(crate) use outbound::HttpHooks;
#[cfg(feature = "http")]
pub use outbound::own_addresses;
pub(crate) use redact::RedactingStream;
pub use redact::Redactor;

/// What a topic grants its jobs. `Grants::default()` grants nothing.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Grants {
    /// Outbound HTTP; `None`: no `wasi:http`.
    pub http: Option<Arc<HttpGrant>>,
    /// Config values and secrets; `None`: no `wasi:config`.
    pub config: Option<Arc<ConfigGrant>>,
}

impl Grants {
    /// Grants `http`.
    #[must_use]
    pub fn with_http(mut self, http: HttpGrant) -> Self {
        self.http = (!http.allowed.is_empty()).then(|| Arc::new(http));
        self
    }

    /// Grants `config`.
    #[must_use]
    pub fn with_config(mut self, config: ConfigGrant) -> Self {
        self.config = Some(Arc::new(config));
        self
    }

    /// The same grants with their secrets read again (see
    /// [`ConfigGrant::reread`]).
    ///
    /// # Errors
    ///
    /// [`SecretError`] naming a secret that cannot be read now.
    pub fn reread(&self) -> Result<Self, SecretError> {
        let config = match &self.config {
            Some(config) if !config.sources_empty() => Some(Arc::new(config.reread()?)),
            other => other.clone(),
        };
        Ok(Self { http: self.http.clone(), config })
    }

    /// What to replace in what the guest logs or reports: its secrets.
    pub fn redactor(&self) -> Redactor {
        self.config.as_ref().map(|c| c.redactor()).unwrap_or_default()
    }
}
