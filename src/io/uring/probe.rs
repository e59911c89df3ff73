//! Whether this kernel and process may use io_uring (`--io auto` decides with it, `--io uring`
//! fails with its reason). One probe per process: the answer cannot change while it runs, and
//! a sweep plans every cell.

use std::io;
use std::sync::OnceLock;

use io_uring::{opcode, IoUring, Probe};

/// The oldest kernel the backend runs on: multishot `recv` into a provided-buffer ring came in
/// Linux 6.0 (the buffer rings in 5.19), deferred completion work (`DEFER_TASKRUN`) in 6.1.
const MIN_KERNEL: (u32, u32) = (6, 1);

/// Where the kernel says whether unprivileged processes may create rings (Linux 6.6 and later):
/// 0 allowed, 1 only for members of `kernel.io_uring_group`, 2 for no one.
const DISABLED_SYSCTL: &str = "/proc/sys/kernel/io_uring_disabled";

/// The operations the backend submits, by name for the reason text.
const NEEDED: [(u8, &str); 7] = [
    (opcode::Recv::CODE, "recv"),
    (opcode::Send::CODE, "send"),
    (opcode::Connect::CODE, "connect"),
    (opcode::Close::CODE, "close"),
    (opcode::AsyncCancel::CODE, "async cancel"),
    (opcode::Timeout::CODE, "timeout"),
    // Also the opcode of TimeoutUpdate (a flag of the same operation).
    (opcode::TimeoutRemove::CODE, "timeout remove"),
];

/// `Ok` when a ring can be set up with everything the backend uses; `Err` says why not, in words
/// that fit `io_uring unavailable (…)`.
pub(crate) fn check() -> Result<(), String> {
    static VERDICT: OnceLock<Result<(), String>> = OnceLock::new();
    VERDICT.get_or_init(probe).clone()
}

/// Asks the kernel, cheapest question first.
fn probe() -> Result<(), String> {
    let disabled = std::fs::read_to_string(DISABLED_SYSCTL).ok();
    if let Some(reason) = disabled.as_deref().and_then(disabled_reason) {
        return Err(reason);
    }
    let release = rustix::system::uname()
        .release()
        .to_string_lossy()
        .into_owned();
    version_reason(&release).map_or(Ok(()), Err)?;
    let ring = IoUring::new(8).map_err(|error| setup_reason(&error, disabled.as_deref()))?;
    let mut probe = Probe::new();
    ring.submitter()
        .register_probe(&mut probe)
        .map_err(|error| format!("cannot list the kernel's io_uring operations: {error}"))?;
    let missing: Vec<&str> = NEEDED
        .iter()
        .filter(|(code, _)| !probe.is_supported(*code))
        .map(|(_, name)| *name)
        .collect();
    match missing.is_empty() {
        true => Ok(()),
        false => Err(format!(
            "the kernel lacks io_uring operations: {}",
            missing.join(", ")
        )),
    }
}

/// The reason in `kernel.io_uring_disabled`'s value, if it forbids every process; 1 only forbids
/// processes outside `kernel.io_uring_group`, which setting up a ring finds out.
fn disabled_reason(value: &str) -> Option<String> {
    (value.trim() == "2").then(|| {
        "kernel.io_uring_disabled is 2: the kernel refuses io_uring to every process".into()
    })
}

/// `major.minor` of a kernel release such as `6.8.0-45-generic` or `5.15.167.4-microsoft`.
fn parse_release(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// Why this kernel release is too old (or unreadable), if it is.
fn version_reason(release: &str) -> Option<String> {
    match parse_release(release) {
        Some(version) if version >= MIN_KERNEL => None,
        Some(_) => Some(format!(
            "kernel {release} is older than {}.{}, which multishot receive and deferred completions need",
            MIN_KERNEL.0, MIN_KERNEL.1
        )),
        None => Some(format!("cannot read the kernel version from '{release}'")),
    }
}

/// Why `io_uring_setup` failed, from its error and `kernel.io_uring_disabled`'s value.
fn setup_reason(error: &io::Error, disabled: Option<&str>) -> String {
    match error.raw_os_error() {
        Some(code) if code == rustix::io::Errno::PERM.raw_os_error() => {
            match disabled.map(str::trim) {
                Some("1") => "kernel.io_uring_disabled is 1 and this process is not in kernel.io_uring_group".into(),
                _ => "io_uring_setup: EPERM, a seccomp filter forbids it; container runtimes' default profiles do".into(),
            }
        }
        Some(code) if code == rustix::io::Errno::NOSYS.raw_os_error() => {
            "io_uring_setup: ENOSYS, the kernel is built without io_uring or a seccomp filter hides it"
                .into()
        }
        Some(code) if code == rustix::io::Errno::NOMEM.raw_os_error() => {
            "io_uring_setup: ENOMEM, raise the locked-memory limit: ulimit -l".into()
        }
        _ => format!("io_uring_setup: {error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_parse_to_major_and_minor() {
        assert_eq!(parse_release("6.8.0-45-generic"), Some((6, 8)));
        assert_eq!(parse_release("6.18.44-fc-v509"), Some((6, 18)));
        assert_eq!(
            parse_release("5.15.167.4-microsoft-standard-WSL2"),
            Some((5, 15))
        );
        assert_eq!(parse_release("6.0"), Some((6, 0)));
        assert_eq!(parse_release("6.1-rc3"), Some((6, 1)));
        assert_eq!(parse_release("6"), None);
        assert_eq!(parse_release("linux"), None);
        assert_eq!(parse_release(""), None);
    }

    #[test]
    fn old_and_unreadable_releases_have_a_reason() {
        assert_eq!(version_reason("6.1.0"), None);
        assert!(version_reason("6.0.9").is_some());
        assert_eq!(version_reason("10.1.2"), None);
        assert_eq!(
            version_reason("5.19.17-arch1").as_deref(),
            Some("kernel 5.19.17-arch1 is older than 6.1, which multishot receive and deferred completions need")
        );
        assert_eq!(
            version_reason("weird").as_deref(),
            Some("cannot read the kernel version from 'weird'")
        );
    }

    #[test]
    fn the_sysctl_forbids_only_at_two() {
        assert_eq!(disabled_reason("0\n"), None);
        assert_eq!(disabled_reason("1\n"), None, "setting up a ring tells");
        assert!(disabled_reason("2\n")
            .unwrap()
            .contains("io_uring_disabled is 2"));
    }

    #[test]
    fn setup_errors_read_as_causes() {
        let errno = |errno: rustix::io::Errno| io::Error::from_raw_os_error(errno.raw_os_error());
        let perm = errno(rustix::io::Errno::PERM);
        assert!(setup_reason(&perm, Some("0\n")).contains("seccomp"));
        assert!(setup_reason(&perm, None).contains("seccomp"));
        assert!(setup_reason(&perm, Some("1\n")).contains("io_uring_group"));
        assert!(setup_reason(&errno(rustix::io::Errno::NOSYS), None).contains("without io_uring"));
        assert!(setup_reason(&errno(rustix::io::Errno::NOMEM), None).contains("ulimit -l"));
        assert!(setup_reason(&errno(rustix::io::Errno::INVAL), None)
            .starts_with("io_uring_setup: Invalid argument"));
    }

    #[test]
    fn the_verdict_is_the_same_every_time() {
        assert_eq!(check(), check());
    }
}
