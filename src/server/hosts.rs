//! Which names a loopback server answers for. A web page whose name an attacker makes
//! resolve to 127.0.0.1 (DNS rebinding) sends its own name as the `Host`: refusing every
//! name but loopback's, the address listened on and those given with `--allow-host`
//! keeps such a page from the API, `/mcp` and the web view alike. A server that asks for
//! tokens answers any name: a page cannot send the token.

use std::net::SocketAddr;

/// The names a server answers for besides loopback names.
#[derive(Debug, Clone, Default)]
pub struct Hosts {
    /// The address listened on: its IP (with any port) is answered.
    pub bound: Option<SocketAddr>,
    /// More names (`--allow-host`): a reverse proxy's, a DNS name's.
    pub allow: Vec<String>,
}

impl Hosts {
    /// Whether `host` (a `Host` header or an `:authority`: a name or address, maybe with a
    /// port) is one this server is reached by.
    pub fn allows(&self, host: &str) -> bool {
        let Some(name) = without_port(host) else {
            return false;
        };
        let name = name.to_ascii_lowercase();
        if matches!(name.as_str(), "localhost" | "127.0.0.1" | "::1") {
            return true;
        }
        if let Some(bound) = self.bound
            && !bound.ip().is_unspecified()
            && name == bound.ip().to_string()
        {
            return true;
        }
        self.allow.iter().any(|allowed| {
            let allowed = allowed.trim();
            // An allowed name may be given with a port, or be a bare IPv6 address.
            let allowed = if allowed.parse::<std::net::Ipv6Addr>().is_ok() {
                Some(allowed)
            } else {
                without_port(allowed)
            };
            allowed.is_some_and(|a| a.eq_ignore_ascii_case(&name))
        })
    }
}

/// The host a request names: its URI's authority (an absolute-form or HTTP/2 request),
/// else its `Host` header.
pub(super) fn of_request<B>(request: &http::Request<B>) -> Option<String> {
    request
        .uri()
        .authority()
        .map(|a| a.as_str().to_owned())
        .or_else(|| {
            request
                .headers()
                .get(http::header::HOST)
                .and_then(|h| h.to_str().ok())
                .map(str::to_owned)
        })
}

/// A host without its port, an IPv6 address without its brackets; `None` when it is not
/// one (`[::1]x`, `a:b:c`).
fn without_port(host: &str) -> Option<&str> {
    let host = host.trim();
    if let Some(rest) = host.strip_prefix('[') {
        let (address, after) = rest.split_once(']')?;
        let port_ok = after.is_empty()
            || after
                .strip_prefix(':')
                .is_some_and(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
        return port_ok.then_some(address);
    }
    match host.split_once(':') {
        None => Some(host),
        Some((name, port)) if !port.is_empty() && port.chars().all(|c| c.is_ascii_digit()) => {
            Some(name)
        }
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_the_bound_address_and_allowed_names_are_answered_and_nothing_else() {
        let hosts = Hosts {
            bound: Some("192.168.1.7:50051".parse().unwrap()),
            allow: vec![
                "eywa.internal".into(),
                "proxy.lan:8443".into(),
                "fe80::1".into(),
            ],
        };
        for yes in [
            "localhost",
            "LOCALHOST:50051",
            "127.0.0.1:50051",
            "[::1]:50051",
            "[::1]",
            "192.168.1.7:50051",
            "eywa.internal",
            "Eywa.Internal:50051",
            "proxy.lan",
            "[fe80::1]:50051",
        ] {
            assert!(hosts.allows(yes), "{yes}");
        }
        for no in [
            "evil.example",
            "localhost.",
            "localhost.evil.example",
            "127.0.0.1.nip.io",
            "eywa.internal.evil.example",
            "[::1]evil",
            "[::1]:",
            "[::1]:x",
            "localhost:",
            "user@localhost",
            "::1",
            "0.0.0.0",
            "",
        ] {
            assert!(!hosts.allows(no), "{no}");
        }
        // Bound to every address: that address names no host.
        let any = Hosts {
            bound: Some("0.0.0.0:50051".parse().unwrap()),
            allow: Vec::new(),
        };
        assert!(!any.allows("0.0.0.0:50051"));
    }
}
