//! Permanent faults: technical faults a retry cannot fix (a host the
//! allowlist denies, an input the guest cannot read). A job whose fault's
//! code is one of them ends at once, an incident, its retry policy unspent.

use std::fmt;

/// Fault codes never retried: each entry a code, or a prefix ending in
/// `*` (`billing.*`). [`PermanentFaults::default`] is husk's own:
/// `http.http-request-denied` (the topic's allowlist refused the host) and
/// `invalid-input` (the guest SDKs' fault for input they cannot read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermanentFaults(Vec<String>);

/// Why a list of permanent faults was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{entry}`: {reason}")]
pub struct PermanentFaultsError {
    /// The entry.
    pub entry: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl PermanentFaults {
    /// The codes husk's own guests and host calls end with when retrying
    /// cannot help.
    pub const BUILT_IN: [&str; 2] = ["http.http-request-denied", "invalid-input"];

    /// A list of codes and prefixes (see the type's docs); empty: every
    /// technical fault is retried by its policy.
    ///
    /// # Errors
    ///
    /// [`PermanentFaultsError`] for an empty entry, or a `*` anywhere but
    /// at the end.
    pub fn new<S: Into<String>>(entries: impl IntoIterator<Item = S>) -> Result<Self, PermanentFaultsError> {
        let entries: Vec<String> = entries.into_iter().map(Into::into).collect();
        for entry in &entries {
            let refuse = |reason| Err(PermanentFaultsError { entry: entry.clone(), reason });
            if entry.is_empty() || entry == "*" {
                return refuse("names no code (a code, or a prefix ending in `*`)");
            }
            if entry[..entry.len() - 1].contains('*') {
                return refuse("`*` only ends a prefix");
            }
        }
        Ok(Self(entries))
    }

    /// Whether a fault with `code` is permanent.
    pub fn matches(&self, code: &str) -> bool {
        self.0.iter().any(|entry| match entry.strip_suffix('*') {
            Some(prefix) => code.starts_with(prefix),
            None => code == entry,
        })
    }

    /// The entries.
    pub fn entries(&self) -> &[String] {
        &self.0
    }
}

impl Default for PermanentFaults {
    fn default() -> Self {
        Self(Self::BUILT_IN.map(str::to_owned).to_vec())
    }
}

impl fmt::Display for PermanentFaults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("none");
        }
        f.write_str(&self.0.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_prefixes_match_and_bad_entries_are_refused() {
        let built_in = PermanentFaults::default();
        assert!(built_in.matches("http.http-request-denied") && built_in.matches("invalid-input"));
        assert!(!built_in.matches("http.connection-refused") && !built_in.matches("invalid-input.x"));
        let listed = PermanentFaults::new(["billing.*", "quote.unknown-currency"]).unwrap();
        assert!(listed.matches("billing.card-declined") && listed.matches("billing."));
        assert!(listed.matches("quote.unknown-currency") && !listed.matches("quote.rates-unavailable"));
        assert!(!listed.matches("http.http-request-denied"), "a list replaces the built-in one");
        assert!(!PermanentFaults::new(Vec::<String>::new()).unwrap().matches("anything"));
        for bad in ["", "*", "bill*ing", "*.declined"] {
            let refused = PermanentFaults::new([bad]).unwrap_err();
            assert_eq!(refused.entry, bad);
        }
        assert_eq!(listed.to_string(), "billing.*, quote.unknown-currency");
    }
}
