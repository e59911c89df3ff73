//! Listening addresses that let other machines in: `serve --host` and `--metrics-listen` warn
//! about them, since neither the target nor the metrics endpoint authenticates anyone (and the
//! built-in TLS key in `certs/` is public).

use std::net::IpAddr;

/// The one-line warning for `flag` listening on `ip`, saying what `anyone` reaching it can do,
/// or `None` for a loopback address. Every other address is reachable from elsewhere: the
/// unspecified `0.0.0.0` and `::` included, an IPv4-mapped loopback (`::ffff:127.0.0.1`) excluded.
pub(crate) fn warning(flag: &str, ip: IpAddr, anyone: &str) -> Option<String> {
    (!ip.to_canonical().is_loopback())
        .then(|| format!("h2load-rs: warning: {flag} {ip} is not a loopback address: {anyone}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_addresses_are_quiet() {
        for quiet in ["127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"] {
            let ip: IpAddr = quiet.parse().unwrap();
            assert_eq!(warning("--host", ip, "anyone can"), None, "{quiet}");
        }
        for exposed in [
            "0.0.0.0",
            "::",
            "192.168.1.2",
            "10.0.0.1",
            "::ffff:10.0.0.1",
            "2001:db8::1",
        ] {
            let ip: IpAddr = exposed.parse().unwrap();
            let line = warning("--metrics-listen", ip, "anyone can").unwrap();
            assert!(
                line.starts_with(&format!(
                    "h2load-rs: warning: --metrics-listen {ip} is not a loopback"
                )),
                "{line}"
            );
            assert!(!line.contains('\n'), "{line}");
        }
    }
}
