//! Outbound HTTP granted by allowlist: which hosts a topic's jobs may call.
//!
//! An entry is `scheme://host[:port]`: `https://api.example.com`,
//! `http://127.0.0.1:8089`, `https://*.example.com` (any subdomain, not the
//! domain itself). Without a port, the scheme's default (443, 80). A request
//! goes out only if an entry matches its scheme, host and port; its address,
//! after DNS, must be globally reachable and not one of the host's own
//! ([`is_prohibited`]) unless the entry names that address (or the host
//! itself, not by wildcard).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

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

/// The IPv4 ranges of the IANA IPv4 Special-Purpose Address Registry that
/// are not globally reachable, and multicast: network, prefix length, name.
const V4_NOT_GLOBAL: &[(Ipv4Addr, u8, &str)] = &[
    (Ipv4Addr::new(0, 0, 0, 0), 8, "this network"),
    (Ipv4Addr::new(10, 0, 0, 0), 8, "private"),
    (Ipv4Addr::new(100, 64, 0, 0), 10, "shared address space (carrier-grade NAT)"),
    (Ipv4Addr::new(127, 0, 0, 0), 8, "loopback"),
    (Ipv4Addr::new(169, 254, 0, 0), 16, "link-local (the metadata service among them)"),
    (Ipv4Addr::new(172, 16, 0, 0), 12, "private"),
    // The whole /24, its two globally reachable anycast /32s (192.0.0.9,
    // 192.0.0.10) too: simpler, and no outbound call needs them.
    (Ipv4Addr::new(192, 0, 0, 0), 24, "IETF protocol assignments"),
    (Ipv4Addr::new(192, 0, 2, 0), 24, "documentation (TEST-NET-1)"),
    (Ipv4Addr::new(192, 88, 99, 0), 24, "6to4 relay anycast (deprecated)"),
    (Ipv4Addr::new(192, 168, 0, 0), 16, "private"),
    (Ipv4Addr::new(198, 18, 0, 0), 15, "benchmarking"),
    (Ipv4Addr::new(198, 51, 100, 0), 24, "documentation (TEST-NET-2)"),
    (Ipv4Addr::new(203, 0, 113, 0), 24, "documentation (TEST-NET-3)"),
    (Ipv4Addr::new(224, 0, 0, 0), 4, "multicast"),
    // 255.255.255.255 (limited broadcast) is inside.
    (Ipv4Addr::new(240, 0, 0, 0), 4, "reserved"),
];

/// The ranges inside IPv6 global unicast (2000::/3) that are not globally
/// reachable, or that carry traffic elsewhere than their address says.
const V6_NOT_GLOBAL: &[(Ipv6Addr, u8, &str)] = &[
    // Teredo (2001::/32), benchmarking (2001:2::/48), ORCHID and the
    // anycast services among them: the whole /23, its few globally
    // reachable ones too.
    (Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0), 23, "IETF protocol assignments"),
    (Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0), 32, "documentation"),
    // An IPv4 address inside, reached through a relay: refused outright.
    (Ipv6Addr::new(0x2002, 0, 0, 0, 0, 0, 0, 0), 16, "6to4"),
    (Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0), 20, "documentation"),
];

fn in_v4(address: Ipv4Addr, (network, length, _): &(Ipv4Addr, u8, &str)) -> bool {
    let mask = u32::MAX.checked_shl(32 - u32::from(*length)).unwrap_or(0);
    u32::from(address) & mask == u32::from(*network)
}

fn in_v6(address: Ipv6Addr, (network, length, _): &(Ipv6Addr, u8, &str)) -> bool {
    let mask = u128::MAX.checked_shl(128 - u32::from(*length)).unwrap_or(0);
    u128::from(address) & mask == u128::from(*network)
}

/// The IPv4 address an IPv6 one reaches: IPv4-mapped (`::ffff:a.b.c.d`,
/// connected to as that IPv4 address) and NAT64's well-known prefix
/// (`64:ff9b::a.b.c.d`, translated to it by a gateway).
fn embedded_v4(address: Ipv6Addr) -> Option<Ipv4Addr> {
    const NAT64: (Ipv6Addr, u8, &str) = (Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0), 96, "NAT64");
    if let Some(v4) = address.to_ipv4_mapped() {
        return Some(v4);
    }
    let [.., a, b, c, d] = address.octets();
    in_v6(address, &NAT64).then(|| Ipv4Addr::new(a, b, c, d))
}

/// Whether `address` is not globally reachable, by the IANA IPv4 and IPv6
/// Special-Purpose Address Registries (their "Globally Reachable" False),
/// more strictly where simpler:
///
/// - IPv4: 0/8, 10/8, 100.64/10 (shared), 127/8, 169.254/16 (link-local,
///   the metadata service among them), 172.16/12, 192.0.0/24 (whole, its
///   two anycast /32s too), 192.0.2/24, 192.88.99/24 (deprecated 6to4
///   relays), 192.168/16, 198.18/15, 198.51.100/24, 203.0.113/24, 224/4
///   (multicast, from the multicast registry), 240/4 (reserved, with
///   255.255.255.255).
/// - IPv6: IPv4-mapped (`::ffff:0:0/96`) and NAT64 (`64:ff9b::/96`) by the
///   IPv4 address inside; everything outside global unicast 2000::/3 — `::`,
///   `::1`, IPv4-compatible `::/96`, local NAT64 `64:ff9b:1::/48`, discard
///   `100::/64`, SRv6 `5f00::/16`, unique local `fc00::/7`, link-local
///   `fe80::/10`, site-local `fec0::/10`, multicast `ff00::/8` and the
///   unassigned rest; and inside it 2001::/23 (IETF protocol assignments,
///   Teredo among them), 2001:db8::/32, 2002::/16 (6to4) and 3fff::/20.
pub fn is_not_global(address: IpAddr) -> bool {
    match address {
        IpAddr::V4(v4) => V4_NOT_GLOBAL.iter().any(|range| in_v4(v4, range)),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => is_not_global(IpAddr::V4(v4)),
            None => v6.segments()[0] & 0xe000 != 0x2000 || V6_NOT_GLOBAL.iter().any(|range| in_v6(v6, range)),
        },
    }
}

/// Whether a request whose allowlist entry does not name the host must not
/// reach `address`: it is not globally reachable ([`is_not_global`]), or it
/// is one of `own`, the addresses of the host's own network interfaces
/// (read at the check, as interfaces change), itself or inside an
/// IPv4-mapped or NAT64 address — a name pointed there would reach husk's
/// own API and whatever else listens on the host.
pub fn is_prohibited(address: IpAddr, own: &[IpAddr]) -> bool {
    let inside = match address {
        IpAddr::V6(v6) => embedded_v4(v6).map(IpAddr::V4),
        IpAddr::V4(_) => None,
    };
    is_not_global(address) || own.contains(&address) || inside.is_some_and(|v4| own.contains(&v4))
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use super::{AllowedHost, is_not_global, is_prohibited};

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

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    /// One address inside each range of the rule (and at its edges), every
    /// one refused.
    #[test]
    fn addresses_that_are_not_globally_reachable_are_refused() {
        for (address, range) in [
            ("0.0.0.0", "0/8"),
            ("0.1.2.3", "0/8"),
            ("10.0.0.1", "10/8"),
            ("10.255.255.255", "10/8"),
            ("100.64.0.1", "100.64/10"),
            ("100.127.255.254", "100.64/10"),
            ("127.0.0.1", "127/8"),
            ("127.255.0.1", "127/8"),
            ("169.254.169.254", "169.254/16"),
            ("169.254.0.1", "169.254/16"),
            ("172.16.0.1", "172.16/12"),
            ("172.31.255.255", "172.16/12"),
            ("192.0.0.1", "192.0.0/24"),
            ("192.0.0.9", "192.0.0/24 (whole)"),
            ("192.0.0.170", "192.0.0/24"),
            ("192.0.2.2", "192.0.2/24"),
            ("192.0.2.255", "192.0.2/24"),
            ("192.88.99.1", "192.88.99/24"),
            ("192.168.1.1", "192.168/16"),
            ("198.18.0.1", "198.18/15"),
            ("198.19.255.254", "198.18/15"),
            ("198.51.100.7", "198.51.100/24"),
            ("203.0.113.9", "203.0.113/24"),
            ("224.0.0.1", "224/4"),
            ("239.255.255.250", "224/4"),
            ("240.0.0.1", "240/4"),
            ("255.255.255.254", "240/4"),
            ("255.255.255.255", "broadcast"),
            ("::", "::/128"),
            ("::1", "::1/128"),
            ("::ffff:127.0.0.1", "IPv4-mapped loopback"),
            ("::ffff:10.0.0.1", "IPv4-mapped private"),
            ("::ffff:192.0.2.2", "IPv4-mapped TEST-NET-1"),
            ("::ffff:100.64.0.1", "IPv4-mapped shared"),
            ("::127.0.0.1", "IPv4-compatible"),
            ("::192.0.2.2", "IPv4-compatible"),
            ("::8.8.8.8", "IPv4-compatible (deprecated: refused outright)"),
            ("::ffff:0:8.8.8.8", "IPv4-translated ::ffff:0:0:0/96"),
            ("64:ff9b::7f00:1", "NAT64 of 127.0.0.1"),
            ("64:ff9b::192.0.2.2", "NAT64 of 192.0.2.2"),
            ("64:ff9b::a9fe:a9fe", "NAT64 of 169.254.169.254"),
            ("64:ff9b::c612:1", "NAT64 of 198.18.0.1"),
            ("64:ff9b:1::1", "64:ff9b:1::/48"),
            ("64:ff9b:1:ffff::808:808", "64:ff9b:1::/48"),
            ("100::1", "100::/64"),
            ("100::ffff:ffff:ffff:ffff", "100::/64"),
            ("2001::1", "2001::/23"),
            ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo 2001::/32"),
            ("2001:2::1", "2001::/23 (benchmarking)"),
            ("2001:1ff:ffff::1", "2001::/23"),
            ("2001:db8::1", "2001:db8::/32"),
            ("2001:db8:ffff::1", "2001:db8::/32"),
            ("2002:c000:202::1", "6to4 of 192.0.2.2"),
            ("2002:7f00:1::1", "6to4 of 127.0.0.1"),
            ("2002:808:808::1", "6to4 (refused outright)"),
            ("3fff::1", "3fff::/20"),
            ("3fff:fff:ffff::1", "3fff::/20"),
            ("5f00::1", "SRv6 5f00::/16"),
            ("fc00::1", "fc00::/7"),
            ("fd00::2", "fc00::/7"),
            ("fe80::1", "fe80::/10"),
            ("febf::1", "fe80::/10"),
            ("fec0::1", "fec0::/10"),
            ("ff02::1", "ff00::/8"),
            ("ff0e::1", "ff00::/8"),
            ("4000::1", "outside 2000::/3"),
            ("1fff:ffff::1", "outside 2000::/3"),
        ] {
            assert!(is_not_global(ip(address)), "{address} ({range})");
            assert!(is_prohibited(ip(address), &[]), "{address} ({range})");
        }
    }

    /// The addresses just outside each range stay allowed.
    #[test]
    fn globally_reachable_addresses_just_outside_each_range_are_allowed() {
        for address in [
            "8.8.8.8",
            "1.1.1.1",
            "93.184.216.34",
            "1.0.0.0",
            "9.255.255.255",
            "11.0.0.1",
            "100.63.255.255",
            "100.128.0.1",
            "126.255.255.255",
            "128.0.0.1",
            "169.253.255.255",
            "169.255.0.1",
            "172.15.255.255",
            "172.32.0.1",
            "191.255.255.255",
            "192.0.1.1",
            "192.0.3.1",
            "192.88.98.1",
            "192.88.100.1",
            "192.167.255.255",
            "192.169.0.1",
            "198.17.255.255",
            "198.20.0.1",
            "198.51.99.1",
            "198.51.101.1",
            "203.0.112.1",
            "203.0.114.1",
            "223.255.255.255",
            "2606:4700::1",
            "2606:4700::1111",
            "2a00:1450:4001::1",
            "2000::1",
            "2001:200::1",
            "2001:db7:ffff::1",
            "2001:db9::1",
            "2003::1",
            "2620:4f:8000::1",
            "3ffe::1",
            "3fff:1000::1",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "64:ff9b::c000:301",
        ] {
            assert!(!is_not_global(ip(address)), "{address}");
            assert!(!is_prohibited(ip(address), &[]), "{address}");
        }
    }

    /// An address of one of the host's own interfaces is refused even when
    /// it is globally reachable, itself or inside an IPv4-mapped or NAT64
    /// address; the others stay allowed.
    #[test]
    fn the_hosts_own_interface_addresses_are_refused() {
        let own = [ip("127.0.0.1"), ip("8.8.4.4"), ip("2606:4700::6810:85e5"), ip("::1")];
        for address in ["8.8.4.4", "::ffff:8.8.4.4", "64:ff9b::808:404", "2606:4700::6810:85e5"] {
            assert!(!is_not_global(ip(address)), "{address} is globally reachable");
            assert!(is_prohibited(ip(address), &own), "{address} is the host's own");
        }
        for address in ["8.8.8.8", "8.8.4.5", "2606:4700::6810:85e6", "::ffff:8.8.8.8"] {
            assert!(!is_prohibited(ip(address), &own), "{address}");
        }
        // This machine's eth0 (192.0.2.2) is refused both ways.
        assert!(is_prohibited(ip("192.0.2.2"), &[ip("192.0.2.2")]));
    }
}
