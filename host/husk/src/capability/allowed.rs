//! Outbound HTTP granted by allowlist: which hosts a topic's jobs may call.
//!
//! An entry is `scheme://host[:port]`: `https://api.example.com`,
//! `http://127.0.0.1:8089`, `https://*.example.com` (any subdomain, not the
//! domain itself). Without a port, the scheme's default (443, 80). A request
//! goes out only if an entry matches its scheme, host and port; its address,
//! after DNS, must not be loopback, private, link-local, unspecified or the
//! metadata service's unless the entry names that address (or the host
//! itself, not by wildcard).

use std::fmt;
use std::net::IpAddr;

/// One allowed destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedHost {
    https: bool,
    /// The host, lowercase; for a wildcard, the suffix after `*.`.
    host: String,
    wildcard: bool,
    port: u16,
}

/// Why an allowlist entry is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{entry}`: {reason}")]
pub struct AllowedHostError {
    /// The entry.
    pub entry: String,
    /// Why.
    pub reason: String,
}

impl AllowedHost {
    /// Parses `scheme://host[:port]`.
    ///
    /// # Errors
    ///
    /// [`AllowedHostError`] for another scheme, a path, a user, an empty host
    /// or a bad port.
    pub fn parse(entry: &str) -> Result<Self, AllowedHostError> {
        let refuse = |reason: &str| AllowedHostError { entry: entry.to_owned(), reason: reason.to_owned() };
        let (https, rest) = if let Some(rest) = entry.strip_prefix("https://") {
            (true, rest)
        } else if let Some(rest) = entry.strip_prefix("http://") {
            (false, rest)
        } else {
            return Err(refuse("must start with `https://` or `http://`"));
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains(['/', '?', '#', '@']) {
            return Err(refuse("names a host and port only (no path, query or user)"));
        }
        let (host, port) = match rest.rsplit_once(':') {
            // An IPv6 literal in brackets: its own colons are inside.
            Some((host, port)) if !port.contains(']') => {
                (host, port.parse::<u16>().map_err(|_| refuse("has a port that is not a number from 1 to 65535"))?)
            }
            _ => (rest, if https { 443 } else { 80 }),
        };
        if port == 0 {
            return Err(refuse("has port 0"));
        }
        // An IPv6 literal is kept without its brackets, as requests name it.
        let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
        let (wildcard, host) = match host.strip_prefix("*.") {
            Some(suffix) => (true, suffix),
            None => (false, host),
        };
        if host.is_empty() || host.contains('*') {
            return Err(refuse("needs a host (a wildcard only as a leading `*.`)"));
        }
        Ok(Self { https, host: host.to_ascii_lowercase(), wildcard, port })
    }

    /// Whether a request to `host:port` over `https` (or not) matches.
    pub fn matches(&self, https: bool, host: &str, port: u16) -> bool {
        if self.https != https || self.port != port {
            return false;
        }
        let host = host.to_ascii_lowercase();
        if self.wildcard {
            host.strip_suffix(&self.host).is_some_and(|head| head.len() > 1 && head.ends_with('.'))
        } else {
            host == self.host
        }
    }

    /// Whether this entry names `host` itself, not by wildcard: then its
    /// addresses may be private (the operator chose it).
    pub fn names(&self, host: &str) -> bool {
        !self.wildcard && self.host == host.to_ascii_lowercase()
    }

    /// Whether every request this entry allows, `ceiling` allows too.
    pub fn within(&self, ceiling: &AllowedHost) -> bool {
        if self.https != ceiling.https || self.port != ceiling.port {
            return false;
        }
        match (ceiling.wildcard, self.wildcard) {
            (false, false) => self.host == ceiling.host,
            (false, true) => false,
            (true, _) => {
                self.host.strip_suffix(&ceiling.host).is_some_and(|head| head.len() > 1 && head.ends_with('.'))
                    || (self.wildcard && self.host == ceiling.host)
            }
        }
    }
}

impl fmt::Display for AllowedHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.https { "https" } else { "http" };
        let star = if self.wildcard { "*." } else { "" };
        if self.host.contains(':') {
            write!(f, "{scheme}://[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{scheme}://{star}{}:{}", self.host, self.port)
        }
    }
}

/// Whether `address` is one a request must not reach unless the allowlist
/// names it: loopback, private (RFC 1918, unique local), link-local (the
/// metadata service 169.254.169.254 among them), shared (100.64/10),
/// unspecified or multicast.
pub fn is_internal(address: IpAddr) -> bool {
    match address {
        IpAddr::V4(v4) => {
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_multicast()
                || v4.is_broadcast()
                || (v4.octets()[0] == 100 && (v4.octets()[1] & 0xc0) == 64)
                || v4.octets()[0] == 0
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_internal(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00 // unique local
                || (first & 0xffc0) == 0xfe80 // link-local
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{AllowedHost, is_internal};

    fn entry(text: &str) -> AllowedHost {
        AllowedHost::parse(text).unwrap()
    }

    #[test]
    fn entries_name_a_scheme_a_host_and_a_port() {
        let api = entry("https://API.example.com");
        assert!(api.matches(true, "api.example.com", 443));
        assert!(!api.matches(false, "api.example.com", 443), "scheme");
        assert!(!api.matches(true, "api.example.com", 8443), "port");
        assert!(!api.matches(true, "evil-api.example.com", 443));
        let local = entry("http://127.0.0.1:8089/");
        assert!(local.matches(false, "127.0.0.1", 8089) && !local.matches(false, "127.0.0.1", 80));
        let v6 = entry("http://[::1]:8080");
        assert!(v6.matches(false, "::1", 8080) && v6.names("::1"));
        assert!(entry("http://[::1]").matches(false, "::1", 80));
        for bad in [
            "ftp://x",
            "api.example.com",
            "https://",
            "https://a/b",
            "https://u@a",
            "https://a:0",
            "https://a:x",
            "https://a.*.com",
            "https://*",
        ] {
            assert!(AllowedHost::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_wildcard_matches_subdomains_only_and_never_names_a_host() {
        let any = entry("https://*.example.com");
        assert!(any.matches(true, "api.example.com", 443));
        assert!(any.matches(true, "a.b.example.com", 443));
        assert!(!any.matches(true, "example.com", 443));
        assert!(!any.matches(true, "evilexample.com", 443));
        assert!(!any.names("api.example.com"));
        assert!(entry("https://api.example.com").names("API.example.com"));
    }

    #[test]
    fn a_topics_entry_is_within_a_tenants_when_it_allows_no_more() {
        let ceiling = entry("https://*.example.com");
        assert!(entry("https://api.example.com").within(&ceiling));
        assert!(entry("https://*.api.example.com").within(&ceiling));
        assert!(entry("https://*.example.com").within(&ceiling));
        assert!(!entry("https://example.com").within(&ceiling));
        assert!(!entry("http://api.example.com").within(&ceiling));
        assert!(!entry("https://api.example.com:8443").within(&ceiling));
        assert!(!entry("https://*.example.com").within(&entry("https://api.example.com")));
        assert!(entry("http://127.0.0.1:8089").within(&entry("http://127.0.0.1:8089")));
    }

    #[test]
    fn internal_addresses_are_recognized() {
        for internal in [
            "127.0.0.1",
            "10.0.0.1",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:10.0.0.1",
            "::",
        ] {
            assert!(is_internal(internal.parse().unwrap()), "{internal}");
        }
        for public in ["93.184.216.34", "8.8.8.8", "2606:4700::1111"] {
            assert!(!is_internal(public.parse().unwrap()), "{public}");
        }
    }
}
