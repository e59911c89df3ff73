//! `--io`: the I/O backend asked for, and what the run says it used (`settings.io`, the text
//! report); `H2LOAD_RS_IO` against the command line and scenario files; usage errors; and a kernel
//! that refuses io_uring, played by a seccomp filter: `auto` falls back to epoll saying why once,
//! `uring` fails with status 1.

use std::time::Duration;

use crate::common::{
    assert_clean, assert_usage_error, h2load_rs, h2load_rs_with_env, run_command_with_env, url, Run,
};

const BIN: &str = env!("CARGO_BIN_EXE_h2load-rs");

/// Whether `run` failed because the kernel refuses io_uring; then prints why the test skips.
fn refused(run: &Run) -> bool {
    let refused = run.output.code == 1 && run.output.stderr.contains("io_uring unavailable");
    if refused {
        eprintln!(
            "skipped: this kernel refuses io_uring: {}",
            run.output.stderr.trim()
        );
    }
    refused
}

#[test]
fn uring_runs_are_reported_as_uring() {
    let target = url("/ping");
    for (proto, flags, name) in [
        ("h1", &[][..], "uring"),
        ("h2c", &[][..], "uring"),
        ("h1", &["--io-sqpoll"][..], "uring+sqpoll"),
    ] {
        let args = [
            &[
                "--io", "uring", "--proto", proto, "-c", "2", "-m", "2", "-n", "400",
            ][..],
            flags,
            &[&target],
        ]
        .concat();
        let run = h2load_rs(&args);
        if refused(&run) {
            return;
        }
        assert_clean(&run, name, 400);
        // The ring's reads are not `recvmsg` calls: no receive timestamps, no wait reported.
        crate::figures::assert_receive_wait(&run, name, false);
        assert_eq!(run.cell()["settings"]["io"], name, "{args:?}");
        assert!(
            run.output
                .stdout
                .contains(&format!("\nI/O backend: {name}\n")),
            "{}",
            run.output.stdout
        );
    }
}

#[test]
fn epoll_is_the_default_and_the_report_keeps_h2loads_lines() {
    let run = h2load_rs_with_env(
        &[("H2LOAD_RS_IO", None)],
        &["--h1", "-n", "100", &url("/ping")],
    );
    assert_clean(&run, "default", 100);
    assert_eq!(run.cell()["settings"]["io"], "epoll");
    assert!(
        !run.output.stdout.contains("I/O backend"),
        "{}",
        run.output.stdout
    );
}

#[test]
fn the_environment_chooses_unless_the_command_line_or_a_file_does() {
    let target = url("/ping");
    let with_env = |value: &str, args: &[&str]| {
        let args = [&["--h1", "-n", "50"], args, &[&target]].concat();
        h2load_rs_with_env(&[("H2LOAD_RS_IO", Some(value))], &args)
    };
    let flag_wins = with_env("uring", &["--io", "epoll"]);
    assert_clean(&flag_wins, "--io epoll", 50);
    assert_eq!(flag_wins.cell()["settings"]["io"], "epoll");
    let from_env = with_env("uring", &[]);
    if !refused(&from_env) {
        assert_eq!(from_env.cell()["settings"]["io"], "uring");
    }

    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("s.toml");
    std::fs::write(&scenario, "io = \"epoll\"\nh1 = true\nrequests = 50\n").unwrap();
    let from_file = h2load_rs_with_env(
        &[("H2LOAD_RS_IO", Some("uring"))],
        &["run", scenario.to_str().unwrap(), &target],
    );
    assert_clean(&from_file, "io = \"epoll\" in a file", 50);
    assert_eq!(from_file.cell()["settings"]["io"], "epoll");
}

#[test]
fn bad_backends_and_sqpoll_without_a_ring_are_usage_errors() {
    let target = url("/ping");
    let output = assert_usage_error(&["--io", "bogus", &target], "invalid value 'bogus'");
    assert!(
        output.stderr.contains("auto, uring, epoll"),
        "{}",
        output.stderr
    );
    assert_usage_error(
        &["--io", "epoll", "--io-sqpoll", &target],
        "--io-sqpoll needs --io uring or --io auto",
    );
    for (env, args) in [
        (Some("bogus"), &[][..]),
        (None, &["--io-sqpoll"][..]),
        (Some("epoll"), &["--io-sqpoll"][..]),
    ] {
        let args = [args, &[&target]].concat();
        let output = run_command_with_env(
            BIN,
            &args,
            &[("H2LOAD_RS_IO", env)],
            Duration::from_secs(60),
        );
        assert_eq!(
            output.code, 2,
            "H2LOAD_RS_IO={env:?} {args:?}: {}",
            output.stderr
        );
        assert_eq!(output.stderr.lines().count(), 1, "{}", output.stderr);
    }
}

/// Runs a command with `io_uring_setup` (system call 425 on every Linux architecture) failing
/// with errno `argv[1]`: a seccomp filter, as container runtimes install. Exits 77 where the
/// filter cannot be installed.
const WITHOUT_IO_URING: &str = r#"
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
def insn(code, k, jt=0, jf=0): return struct.pack("HBBI", code, jt, jf, k)
program = b"".join([
    insn(0x20, 0),                           # load seccomp_data.nr
    insn(0x15, 425, 0, 1),                   # io_uring_setup?
    insn(0x06, 0x00050000 | int(sys.argv[1])),  # SECCOMP_RET_ERRNO
    insn(0x06, 0x7fff0000),                  # SECCOMP_RET_ALLOW
])
buffer = ctypes.create_string_buffer(program)
class Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
fprog = Fprog(len(program) // 8, ctypes.addressof(buffer))
if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:
    print("cannot install a seccomp filter: errno", ctypes.get_errno(), file=sys.stderr)
    sys.exit(77)
os.execv(sys.argv[2], sys.argv[2:])
"#;

#[test]
fn a_kernel_that_refuses_io_uring_means_epoll_for_auto_and_status_1_for_uring() {
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: no python3 to install a seccomp filter with");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("without_io_uring.py");
    std::fs::write(&script, WITHOUT_IO_URING).unwrap();
    let json = dir.path().join("report.json");
    let target = url("/ping");
    let refusing = |errno: &str, args: &[&str]| {
        let args = [&[script.to_str().unwrap(), errno, BIN][..], args].concat();
        run_command_with_env("python3", &args, &[], Duration::from_secs(60))
    };
    let probe = refusing("1", &["--version"]);
    if probe.code == 77 {
        eprintln!("skipped: {}", probe.stderr.trim());
        return;
    }
    assert_eq!(probe.code, 0, "{}", probe.stderr);

    // A sweep of two cells: the note once, both cells on epoll.
    let auto = refusing(
        "1",
        &[
            "--io",
            "auto",
            "--h1",
            "-c",
            "1,2",
            "-n",
            "40",
            "--json",
            json.to_str().unwrap(),
            &target,
        ],
    );
    assert_eq!(auto.code, 0, "{}", auto.stderr);
    let notes: Vec<&str> = auto
        .stderr
        .lines()
        .filter(|line| line.contains("io_uring"))
        .collect();
    assert_eq!(
        notes,
        ["note: --io auto: io_uring unavailable (io_uring_setup: EPERM, a seccomp filter forbids it; container runtimes' default profiles do); using epoll"],
        "{}",
        auto.stderr
    );
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let backends: Vec<&serde_json::Value> = report["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|cell| &cell["settings"]["io"])
        .collect();
    assert_eq!(backends, ["epoll", "epoll"]);

    for (errno, reason) in [
        ("1", "EPERM, a seccomp filter forbids it"),
        ("38", "ENOSYS, the kernel is built without io_uring"),
    ] {
        let uring = refusing(errno, &["--io", "uring", "-n", "10", &target]);
        assert_eq!(uring.code, 1, "{}", uring.stderr);
        assert_eq!(uring.stderr.lines().count(), 1, "{}", uring.stderr);
        assert!(
            uring
                .stderr
                .starts_with("h2load-rs: --io uring: io_uring unavailable (io_uring_setup: ")
                && uring.stderr.contains(reason),
            "{}",
            uring.stderr
        );
        assert!(uring.stdout.is_empty(), "nothing ran: {}", uring.stdout);
    }
}

/// Client sockets to `port` that are established, from /proc/net/tcp (IPv4 loopback).
fn established_to(port: u16) -> usize {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    table
        .lines()
        .skip(1)
        .filter(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let remote_port = fields[2].rsplit(':').next().unwrap();
            u16::from_str_radix(remote_port, 16) == Ok(port) && fields[3] == "01"
        })
        .count()
}

/// Connections the client gives up on (request timeouts, mid-response, with the thread's
/// receive buffers running short) close on the ring as on epoll: the client holds `-c` sockets.
/// Review findings F1/F2 of issue 16: a timed-out connection's send, or a
/// second receive armed on a reused key, kept its socket open until the run ended (2604
/// established sockets after 15 s at -c 100).
#[test]
fn timed_out_connections_give_their_sockets_back_on_both_backends() {
    // A target of its own: only this test's client connects to its port.
    let addr = h2load_rs::testkit::server::spawn_background(
        1,
        h2load_rs::testkit::server::ServeOptions {
            behaviour: h2load_rs::testkit::server::Behaviour {
                delay: Some(Duration::from_millis(20)),
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .expect("built-in target starts");
    let port = addr.port();
    let target = format!("http://{addr}/bytes/2000000");
    for io in ["epoll", "uring"] {
        // The mean of 12 looks in the run's second half: a wave of timeouts holds a few dozen
        // more for a turn (closes and the new connections' connects go out together), which
        // one look in a dozen may catch; leaked sockets stay for many turns.
        let watcher = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(1500));
            let looks: usize = (0..12)
                .map(|_| {
                    std::thread::sleep(Duration::from_millis(100));
                    established_to(port)
                })
                .sum();
            looks / 12
        });
        let run = h2load_rs(&[
            "--io",
            io,
            "--h1",
            "-c",
            "100",
            "-t",
            "1",
            "-D",
            "3s",
            "--request-timeout",
            "25ms",
            &target,
        ]);
        let established = watcher.join().unwrap();
        if refused(&run) {
            break;
        }
        // Whether any 2 MB body beats the 25 ms timeout depends on how busy the machine is
        // (none did in 8,499 tries with the whole suite running beside it): a run where none
        // did exits 1 for that reason alone; what this test is about is the sockets.
        let expected_code = if run.int("requests/succeeded") > 0 {
            0
        } else {
            1
        };
        assert_eq!(
            run.output.code, expected_code,
            "{io}: {}",
            run.output.stderr
        );
        if expected_code == 1 {
            assert!(
                run.output.stderr.contains("no request succeeded"),
                "{io}: {}",
                run.output.stderr
            );
        }
        assert!(
            run.int("requests/timeout") > 0,
            "{io}: no request timed out"
        );
        assert!(
            established <= 115,
            "{io}: {established} client sockets established at -c 100, on average"
        );
    }
}

/// A server that accepts connections and never reads from them, holding them until it is
/// dropped; then it closes them all with their bytes unread (a reset), which frees what the
/// kernel buffered on both sides at once rather than when the orphaned client sockets time out.
struct NeverReads {
    port: u16,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    accepting: Option<std::thread::JoinHandle<()>>,
}

impl NeverReads {
    fn start() -> NeverReads {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        let accepting = std::thread::spawn(move || {
            let mut held = Vec::new();
            while !stopped.load(std::sync::atomic::Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => held.push(stream),
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        NeverReads {
            port,
            stop,
            accepting: Some(accepting),
        }
    }
}

impl Drop for NeverReads {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(accepting) = self.accepting.take() {
            let _ = accepting.join();
        }
    }
}

/// An upload the server never reads is sent in part: the kernel takes what fits in the socket's
/// send buffer (and the server's receive buffer), and the ring's send completes with fewer bytes
/// than staged, so the rest goes in a follow-up send that never completes. When the request
/// times out the connection goes, and that follow-up must be cancelled with it, or it holds the
/// socket open until the run ends. Review finding F1 of issue 16: the follow-up's key was not
/// kept, so one socket stayed established per timed-out request (all 24 by the end here).
#[test]
fn connections_dropped_mid_upload_give_their_sockets_back_on_both_backends() {
    // More than the client's send buffer (at most net.ipv4.tcp_wmem's 4 MiB) and the server's
    // receive buffer (128 KiB: it never reads, so it never grows) hold together.
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("upload");
    std::fs::write(&body, vec![b'a'; 8 << 20]).unwrap();
    for io in ["epoll", "uring"] {
        let server = NeverReads::start();
        let port = server.port;
        let running = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let still = running.clone();
        let watcher = std::thread::spawn(move || {
            let mut looks = Vec::new();
            while still.load(std::sync::atomic::Ordering::Relaxed) {
                looks.push(established_to(port));
                std::thread::sleep(Duration::from_millis(10));
            }
            looks
        });
        // 4 connections, 6 rounds of timeouts: a leak holds 4 more sockets each round.
        let run = h2load_rs(&[
            "--io",
            io,
            "--h1",
            "-c",
            "4",
            "-n",
            "24",
            "-t",
            "1",
            "-d",
            body.to_str().unwrap(),
            "--request-timeout",
            "100ms",
            &format!("http://127.0.0.1:{port}/"),
        ]);
        running.store(false, std::sync::atomic::Ordering::Relaxed);
        let looks = watcher.join().unwrap();
        drop(server);
        if refused(&run) {
            break;
        }
        // No request succeeded: status 1, every one a timeout, each on its own connection.
        assert_eq!(run.output.code, 1, "{io}: {}", run.output.stderr);
        for (field, expected) in [
            ("requests/started", 24),
            ("requests/done", 24),
            ("requests/succeeded", 0),
            ("requests/timeout", 24),
            ("requests/errored", 24),
            ("errors/timeout", 24),
            ("connections/opened", 24),
            ("connections/closed_by_client", 24),
        ] {
            assert_eq!(run.int(field), expected, "{io}: {field}");
        }
        assert_eq!(
            run.cell()["errors"].as_object().unwrap().len(),
            1,
            "{io}: {}",
            run.cell()["errors"]
        );
        // Each slot holds one socket, and for a moment two (the new connection may be up before
        // the old one's close has run); a leaked socket stays for the rest of the run, so a leak
        // of 4 a round holds 12 to 24 through the later rounds and at the end. On a machine short
        // of CPU a closed socket can stay established a while longer (under io_uring, until the
        // ring's cancelled send lets go of it: seen 4, 52, 11, 38, 12, back to 4, and 16, 20, 12,
        // 8, 4 beside stress-ng), but it does let go: so the bound holds on three looks in four,
        // or else on the run's end (the median of its last three looks), where a leak is highest.
        let during: Vec<usize> = looks.iter().copied().filter(|&n| n > 0).collect();
        let mut sorted = during.clone();
        sorted.sort_unstable();
        let most = sorted.get(sorted.len() * 3 / 4).copied().unwrap_or(0);
        let mut last = during[during.len().saturating_sub(3)..].to_vec();
        last.sort_unstable();
        let end = last.get(last.len() / 2).copied().unwrap_or(0);
        assert!(
            most <= 8 || end <= 8,
            "{io}: {most} client sockets established at -c 4 in a quarter of the looks, {end} at \
             the end ({looks:?})"
        );
    }
}
