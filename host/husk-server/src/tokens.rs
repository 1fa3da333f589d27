//! Tenants' API tokens, kept only as SHA-256 hashes.

use std::collections::HashMap;

/// The API's view of the tenants: which token hash belongs to whom.
#[derive(Debug, Clone, Default)]
pub struct Tenants {
    by_hash: HashMap<String, String>,
    /// The dashboard's other roles: read-only tenant tokens, operators.
    viewers: HashMap<String, Principal>,
}

/// Who a token signs in as on the dashboard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// What it sees.
    pub scope: Scope,
    /// Whether it may only look (no button, every change refused).
    pub read_only: bool,
}

/// Whose topics and jobs a [`Principal`] sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// One tenant's, exactly as that tenant's API token.
    Tenant(String),
    /// Every tenant's (an operator token of the config).
    Operator,
}

impl Tenants {
    /// Tenants from `(token hash, tenant)` pairs.
    pub fn new(hashes: impl IntoIterator<Item = (String, String)>) -> Self {
        Self { by_hash: hashes.into_iter().collect(), viewers: HashMap::new() }
    }

    /// Adds the dashboard's roles: read-only tokens (`(hash, tenant)`) and
    /// operator tokens (hashes). They sign in to the dashboard only; the
    /// API takes tenants' tokens alone.
    pub fn with_viewers(
        mut self,
        read_only: impl IntoIterator<Item = (String, String)>,
        operators: impl IntoIterator<Item = String>,
    ) -> Self {
        for (hash, tenant) in read_only {
            self.viewers.insert(hash, Principal { scope: Scope::Tenant(tenant), read_only: true });
        }
        for hash in operators {
            self.viewers.insert(hash, Principal { scope: Scope::Operator, read_only: false });
        }
        self
    }

    /// Who `token` signs in as on the dashboard: a tenant's API token as
    /// that tenant, a read-only token as its tenant, read-only, an
    /// operator token as the operator.
    pub fn principal(&self, token: &str) -> Option<Principal> {
        let hash = token_hash(token);
        if let Some(tenant) = self.by_hash.get(&hash) {
            return Some(Principal { scope: Scope::Tenant(tenant.clone()), read_only: false });
        }
        self.viewers.get(&hash).cloned()
    }

    /// The tenant whose token this is. The token is hashed first, so the
    /// lookup compares digests, never the secret itself.
    pub fn authenticate(&self, token: &str) -> Option<&str> {
        self.by_hash.get(&token_hash(token)).map(String::as_str)
    }

    /// Whether no token is configured (every API call is then refused).
    pub fn is_empty(&self) -> bool {
        self.by_hash.is_empty()
    }
}

/// The hex SHA-256 of a token, as stored in `sha256:` references.
pub fn token_hash(token: &str) -> String {
    husk::engine::content_digest(token.as_bytes())
}

/// Why a token reference in the config is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// `sha256:` not followed by 64 hex digits.
    #[error("`sha256:` takes the 64 hex digits of the token's SHA-256")]
    BadHash,
    /// `env:` with no variable name.
    #[error("`env:` takes the name of an environment variable")]
    NoVariable,
    /// Neither form: a token in clear, which is refused.
    #[error(
        "a token is `sha256:<hex of its SHA-256>` or `env:VAR`, never the token itself (hash one with `printf %s TOKEN | sha256sum`)"
    )]
    InClear,
    /// The `env:` variable is unset or empty.
    #[error("environment variable `{0}` is not set")]
    Unset(String),
}

/// A tenant's API token as the config names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenRef {
    /// The SHA-256 of the token, lowercase hex.
    Sha256(String),
    /// The environment variable holding the token.
    Env(String),
}

impl TokenRef {
    /// Parses `sha256:<hex>` or `env:VAR`.
    ///
    /// # Errors
    ///
    /// Why the text is neither (a token in clear is refused).
    pub fn parse(text: &str) -> Result<Self, TokenError> {
        if let Some(hex) = text.strip_prefix("sha256:") {
            if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(TokenError::BadHash);
            }
            return Ok(TokenRef::Sha256(hex.to_ascii_lowercase()));
        }
        if let Some(var) = text.strip_prefix("env:") {
            if var.is_empty() {
                return Err(TokenError::NoVariable);
            }
            return Ok(TokenRef::Env(var.to_owned()));
        }
        Err(TokenError::InClear)
    }

    /// The token's SHA-256 (hex), reading the environment for `env:`.
    ///
    /// # Errors
    ///
    /// When the variable is unset or empty.
    pub fn resolve(&self) -> Result<String, TokenError> {
        match self {
            TokenRef::Sha256(hex) => Ok(hex.clone()),
            TokenRef::Env(var) => match std::env::var(var) {
                Ok(token) if !token.is_empty() => Ok(token_hash(&token)),
                _ => Err(TokenError::Unset(var.clone())),
            },
        }
    }
}
