//! Tenants' API tokens, kept only as SHA-256 hashes.

use std::collections::HashMap;

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
