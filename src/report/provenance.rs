//! Where a report came from: the command line (secrets redacted), the host, the start time in
//! UTC and the version, at the top of every JSON report, so a file kept for months still says
//! what produced it; `merge` writes its own and keeps each part's.

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

/// Header names whose values a report never shows: credentials, and names that usually carry
/// them (`X-Api-Key`, `X-Auth-Token`, …).
const SECRET_NAMES: [&str; 6] = [
    "authorization",
    "cookie",
    "token",
    "secret",
    "api-key",
    "password",
];
/// What a secret is replaced with.
const REDACTED: &str = "<redacted>";

/// How, where, when and by which version a report was made.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Provenance {
    /// The program's arguments, the program first, each secret redacted (a header value whose
    /// name holds `authorization`, `cookie`, `token`, `secret`, `api-key` or `password`, and a
    /// URL's user name and password); empty in a report from before this field.
    #[serde(default)]
    pub(crate) argv: Vec<String>,
    /// `argv` as one line, each argument quoted for a POSIX shell when it needs it.
    #[serde(default)]
    pub(crate) command_line: String,
    /// The host name of the machine that made it (`uname -n`).
    #[serde(default)]
    pub(crate) host: String,
    /// When it began (a load test: before its first cell), RFC 3339 in UTC.
    #[serde(default)]
    pub(crate) started_at: String,
    /// The h2load-rs version that wrote it.
    #[serde(default)]
    pub(crate) version: String,
}

impl Provenance {
    /// This process's: its arguments, this host, now.
    pub(crate) fn of_this_process() -> Provenance {
        let argv = std::env::args_os()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect();
        Provenance::new(argv, &host_name(), SystemTime::now())
    }

    /// From the program's arguments `argv`, the `host` and the start time `started`.
    fn new(argv: Vec<String>, host: &str, started: SystemTime) -> Provenance {
        let argv: Vec<String> = argv.iter().map(|arg| redacted(arg)).collect();
        Provenance {
            command_line: argv
                .iter()
                .map(|arg| shell_quoted(arg))
                .collect::<Vec<_>>()
                .join(" "),
            argv,
            host: host.to_owned(),
            started_at: crate::units::format_rfc3339(started),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        }
    }
}

/// One part of a merged report: the report it was read from and what made it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Origin {
    /// The file (`file:line` in a log) it was read from.
    pub(crate) source: String,
    /// Its command line, host, start time and version.
    #[serde(flatten)]
    pub(crate) provenance: Provenance,
    /// The parts it was merged from itself, if it was a merged report.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) merged_from: Vec<Origin>,
}

/// The kernel's name for this machine; empty if it has none that reads as text.
fn host_name() -> String {
    rustix::system::uname()
        .nodename()
        .to_str()
        .unwrap_or_default()
        .to_owned()
}

/// `arg` with any secret in it replaced: the value of a header (`Name: value`, as `-H` takes it,
/// or `name=value`) whose name holds one of [`SECRET_NAMES`], and a URL's user name and password.
pub(crate) fn redacted(arg: &str) -> String {
    let mut separators: Vec<usize> = [arg.find(':'), arg.find('=')]
        .into_iter()
        .flatten()
        .collect();
    separators.sort_unstable();
    for at in separators {
        let name = arg[..at].to_ascii_lowercase();
        // `--header=Authorization: x` names the header after the flag's `=`.
        let name = name.rsplit('=').next().unwrap_or_default();
        if SECRET_NAMES.iter().any(|secret| name.contains(secret)) {
            return format!("{}{REDACTED}", &arg[..=at]);
        }
    }
    url_user_redacted(arg)
}

/// A URL's `user:password@` replaced whole (the run neither sends nor logs either); anything else
/// as it is.
fn url_user_redacted(arg: &str) -> String {
    let Some(scheme_end) = arg.find("://") else {
        return arg.to_owned();
    };
    let authority_start = scheme_end + 3;
    let rest = &arg[authority_start..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{}{REDACTED}{}", &arg[..authority_start], &rest[at..]),
        None => arg.to_owned(),
    }
}

/// `arg` as a POSIX shell reads it back: as it is when it holds only safe characters, else in
/// single quotes (a quote inside as `'\''`).
fn shell_quoted(arg: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./:=,@%+".contains(c);
    if !arg.is_empty() && arg.chars().all(safe) {
        arg.to_owned()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn secrets_are_redacted_wherever_the_header_is_given() {
        for (given, shown) in [
            ("Authorization: Bearer abc", "Authorization:<redacted>"),
            ("authorization:Basic dXNlcg==", "authorization:<redacted>"),
            (
                "--header=Authorization: Bearer x",
                "--header=Authorization:<redacted>",
            ),
            (
                "Proxy-Authorization: Basic x",
                "Proxy-Authorization:<redacted>",
            ),
            ("Cookie: session=1", "Cookie:<redacted>"),
            ("X-Api-Key: k", "X-Api-Key:<redacted>"),
            ("x-auth-token: t", "x-auth-token:<redacted>"),
            ("authorization=Bearer x", "authorization=<redacted>"),
            ("x-token=abc:def", "x-token=<redacted>"),
            (
                "http://user:hunter2@127.0.0.1:8080/p?q=1",
                "http://<redacted>@127.0.0.1:8080/p?q=1",
            ),
            ("Accept: text/html", "Accept: text/html"),
            ("http://127.0.0.1:8080/ping", "http://127.0.0.1:8080/ping"),
            ("http://user@127.0.0.1/", "http://<redacted>@127.0.0.1/"),
            (
                "--proxy=http://u:p@127.0.0.1:3128",
                "--proxy=http://<redacted>@127.0.0.1:3128",
            ),
            ("--proto=h1,h2c", "--proto=h1,h2c"),
            ("-c", "-c"),
        ] {
            assert_eq!(redacted(given), shown, "{given}");
        }
    }

    #[test]
    fn the_command_line_reads_back_in_a_shell() {
        let argv = [
            "h2load-rs",
            "-H",
            "Accept: */*",
            "--fail-if",
            "p99>5ms",
            "it's",
        ];
        let made = Provenance::new(
            argv.iter().map(|arg| arg.to_string()).collect(),
            "box",
            UNIX_EPOCH + Duration::from_secs(1_795_773_600),
        );
        assert_eq!(
            made.command_line,
            r"h2load-rs -H 'Accept: */*' --fail-if 'p99>5ms' 'it'\''s'"
        );
        assert_eq!(made.argv, argv);
        assert_eq!(made.host, "box");
        assert_eq!(made.started_at, "2026-11-27T10:00:00Z");
        assert_eq!(made.version, env!("CARGO_PKG_VERSION"));
    }

    #[test]
    fn this_host_has_the_kernels_name() {
        let expected = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        assert_eq!(host_name(), expected.trim_end());
    }
}
